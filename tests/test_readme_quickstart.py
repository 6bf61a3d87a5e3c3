"""The README's quickstart runs as written against a live service, so it cannot rot.

The service is started the way the README's first command starts it (`scripts/serve.sh`, here on a free port with
a database of its own). Then every ```bash block under "## Quickstart" runs, in order, in one bash process, as a
reader would paste them into one terminal. Only the values the README exports for its terminal (`SERVICE_URL`,
`API_KEY`, `S3_ENDPOINT`) and the S3 server's port are replaced, so the blocks reach this test's servers.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess

import boto3
import httpx
import pytest

from tests.support_processes import BASE_DIR, free_port, wait_for_http

README = BASE_DIR / "README.md"
MOTO_COMMAND = "moto_server -p 9000"


def section(text: str, heading: str) -> str:
    """The text under a `## ` heading, up to the next one."""
    start = text.index(f"\n## {heading}\n")
    end = text.find("\n## ", start + 1)
    return text[start:end if end != -1 else len(text)]


def bash_blocks(text: str) -> list[str]:
    return re.findall(r"^```bash\n(.*?)^```$", text, re.S | re.M)


def quickstart_script(text: str, *, exports: dict[str, str], moto_port: int) -> str:
    """The quickstart's blocks as one script, with the test's values for the variables the README exports."""
    script = "\n".join(f"echo '### quickstart block {number}'\n{block}"
                       for number, block in enumerate(bash_blocks(section(text, "Quickstart")), start=1))
    for name, value in exports.items():
        script, found = re.subn(rf"^export {name}=.*$", lambda _, n=name, v=value: f"export {n}={v}", script,
                                flags=re.M)
        assert found == 1, f"the quickstart should export {name} exactly once"
    assert script.count(MOTO_COMMAND) == 1, f"the quickstart should start its S3 server with `{MOTO_COMMAND}`"
    return script.replace(MOTO_COMMAND, f"moto_server -p {moto_port}")


def test_the_readme_names_the_two_commands_and_pins_what_the_quickstart_installs():
    text = README.read_text()
    assert [block.strip() for block in bash_blocks(section(text, "Two commands"))] == [
        "./scripts/serve.sh", "./scripts/test.sh"]
    assert len(text.splitlines()) < 200, "the README is the front page: reference material belongs in docs/"
    pins = dict(line.split("==", 1) for line in (BASE_DIR / "requirements-dev.txt").read_text().splitlines()
                if "==" in line and not line.startswith("#"))
    installed = re.search(r'^pip install -q (.*?)\s+#', section(text, "Quickstart"), re.M).group(1)
    for requirement in re.findall(r'"([^"]+)"', installed):
        name, version = requirement.split("==")
        assert pins.get(name) == version, f"{requirement} in the README, {name}=={pins.get(name)} in requirements-dev"


@pytest.fixture
def served(tmp_path):
    """The README's first command on a free port, with a fresh SQLite database in its own DATA_DIR."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    data_dir = tmp_path / "data"
    env = {**os.environ, "DATA_DIR": str(data_dir), "DATABASE_URL": "", "PYTHONUNBUFFERED": "1",
           "PUBLIC_BASE_URL": url}
    # The defaults a fresh clone has: DEBUG on, which lets the egress guard reach the moto server on loopback
    # without an EGRESS_ALLOWLIST.
    for name in ("TEST_DB_SUFFIX", "REDIS_URL", "SQLITE_PATH", "DEPLOY_ROOT", "DEBUG", "EGRESS_ALLOWLIST",
                 "EXPORTS_REQUIRE_HTTPS"):
        env.pop(name, None)
    log_path = tmp_path / "serve.log"
    with open(log_path, "wb") as log:
        process = subprocess.Popen([str(BASE_DIR / "scripts" / "serve.sh"), "--port", str(port)], cwd=BASE_DIR,
                                   env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        wait_for_http(f"{url}/healthz", process=process, describe=log_path.read_text, timeout=240)
        yield url, data_dir, log_path
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


@pytest.mark.live
@pytest.mark.no_postgres_pass
def test_the_readme_quickstart_runs_as_written_against_a_live_service(served, tmp_path):
    for tool in ("curl", "jq", "tar"):
        if not shutil.which(tool):
            pytest.skip(f"the quickstart needs `{tool}`, which is not installed")
    url, data_dir, serve_log = served
    moto_port = free_port()
    s3_endpoint = f"http://127.0.0.1:{moto_port}"
    script = quickstart_script(README.read_text(), moto_port=moto_port, exports={
        "SERVICE_URL": url, "API_KEY": f"$(cat {data_dir / 'demo_api_key'})", "S3_ENDPOINT": s3_endpoint})
    (tmp_path / "home").mkdir()
    (tmp_path / "scratch").mkdir()
    env = {name: value for name, value in os.environ.items()
           if not name.startswith(("LANGSMITH_", "LANGCHAIN_", "LANGGRAPH_", "AWS_"))}
    env.update({"HOME": str(tmp_path / "home"), "TMPDIR": str(tmp_path / "scratch"), "NO_PROXY": "127.0.0.1,localhost",
                "LANGGRAPH_CLI_NO_ANALYTICS": "1", "PYTHONUNBUFFERED": "1"})
    output_path = tmp_path / "quickstart.log"
    with open(output_path, "wb") as out:
        shell = subprocess.Popen(["bash", "-e", "-o", "pipefail", "-c", script], cwd=BASE_DIR, env=env,
                                 stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        code = shell.wait(900)
        output = output_path.read_text(errors="replace")
        describe = f"{output}\n--- serve.log ---\n{serve_log.read_text(errors='replace')[-6000:]}"
        assert code == 0, describe
        assert "2 + 3 = 5" in output, describe  # 1. traced with the langsmith SDK
        assert '"name": "quickstart"' in output, describe
        assert "\nCompleted\n" in output and "2 runs: [{" in output, describe  # 2. exported and read back
        assert "{'name': 'agent', 'run_type': 'chain', 'status': 'success'}" in output, describe
        assert "\nDEPLOYED\n" in output and "'greeting': 'Hello, world!'" in output, describe  # 3. a tarball
        assert "Deployment successful!" in output, describe  # 4. langgraph deploy
        assert "hello-cli" in output.split("Deployment successful!")[1], describe
        assert "6 * 7 = 42" in output, describe  # 5. the chat's agent over the Agent Server API
        assert "'type': 'reasoning'" not in output, describe  # its text, not its content blocks
        # The Parquet file is in the S3 server the README started.
        listing = boto3.client("s3", endpoint_url=s3_endpoint, region_name="us-east-1", aws_access_key_id="testing",
                               aws_secret_access_key="testing").list_objects_v2(Bucket="exports")
        assert [item["Key"] for item in listing["Contents"] if item["Key"].endswith(".parquet")], describe
    finally:
        # The S3 server the script left running in the background is in the script's session.
        try:
            os.killpg(shell.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    page = httpx.get(f"{url}/")  # the chat page the README opens
    assert page.status_code == 200 and "chat" in page.text.lower()
