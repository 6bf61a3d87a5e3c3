// Polling for the JS clients' scripts (agent_server_client.mjs, chat_client.mjs).

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// Poll `predicate` every `intervalMs` until it returns something truthy, and return that; throw at the timeout.
export async function waitFor(what, predicate, { timeoutMs, intervalMs }) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const value = await predicate();
    if (value) return value;
    await sleep(intervalMs);
  }
  throw new Error(`timed out waiting for ${what}`);
}
