// Polling and reporting for the JS clients' scripts (agent_server_client.mjs, chat_client.mjs, approvals_client.mjs).

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

// Run `main`, then print `report` as one JSON line (with `failure` when `main` threw) and exit 0 or 1.
export function reportWhenDone(main, report) {
  main()
    .then(() => {
      process.stdout.write(JSON.stringify(report) + "\n");
      process.exit(0);
    })
    .catch((error) => {
      report.failure = String(error?.stack || error);
      process.stdout.write(JSON.stringify(report) + "\n");
      process.exit(1);
    });
}
