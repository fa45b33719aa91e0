"""The docker sandbox with ``ANPORD_CONTAINER_COPY=1``: no host folder is bound into the trial's
container. The workspace is copied in when the container starts and out whenever the checks look;
every file a harness or a mock puts in the trial (prompts, MCP registrations, sign-in settings,
the mocks' programs) goes through the sandbox's file methods, so the agent, ``context.exec`` and
the checks all see them — with a real podman."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from container_support import containers, sandbox_image
from project_support import END, eval_file
from sandbox_support import run, spec

from anpord.sandboxes._container import find_cli
from anpord.sandboxes.docker import COPY_ENV, DockerSandbox
from anpord.workspace import files

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("docker")]


@pytest.fixture(scope="module")
def image() -> str:
    return sandbox_image()


@pytest.fixture
def copying(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(COPY_ENV, "1")


def _orphans() -> list[str]:
    """Containers of anpord's whose runner has exited (a finished run's must all be gone; other
    tests' running at the same time belong to live processes)."""
    from anpord.sandboxes._container import LABEL, OWNER_LABEL

    done = find_cli().run_sync("ps", "-a", "--filter", f"label={LABEL}", "--format",
                               "{{.Names}}\t{{index .Labels \"%s\"}}" % OWNER_LABEL)
    assert done.returncode == 0, done.stderr
    rows = [line.split("\t") for line in done.stdout.splitlines() if line.strip()]
    return [row[0] for row in rows if len(row) == 2 and row[1].count("-") >= 2
            and not Path(f"/proc/{row[1].split('-')[1]}").exists()]


def _bound_sources(container: str) -> list[str]:
    done = find_cli().run_sync("inspect", "--format", "{{range .Mounts}}{{.Source}} {{end}}", container)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def test_nothing_is_bound_and_files_go_in_and_out_through_the_cli(image: str, tmp_root: Path, tmp_path: Path, copying: None) -> None:
    tree = tmp_path / "tree"
    (tree / "bin").mkdir(parents=True)
    (tree / "bin" / "hello").write_text("#!/bin/sh\necho hello from $0\n")
    (tree / "bin" / "hello").chmod(0o755)

    async def body() -> None:
        source = files({"seed.txt": "seed\n", "sub/old.txt": "old\n"})
        inst = await DockerSandbox(tmp_root=tmp_root).open(spec(source, sandbox="docker", image=image))
        try:
            assert not inst.host_paths and inst.container is not None
            assert inst.workspace == Path("/anpord/workspace") and inst.home == Path("/anpord/home")
            assert not any(str(tmp_root) in s for s in _bound_sources(inst.container))
            done = await inst.exec("pwd; echo $HOME; cat seed.txt sub/old.txt")
            assert done.stdout.split() == ["/anpord/workspace", "/anpord/home", "seed", "old"], done
            # Written from here, nested folders made: seen inside, read back.
            await inst.write_file(inst.home / ".config" / "tool" / "settings.json", b'{"a": 1}')
            await inst.write_file("notes.txt", b"from the runner")
            seen = await inst.exec("cat $HOME/.config/tool/settings.json; echo; cat notes.txt")
            assert seen.stdout.split("\n")[:2] == ['{"a": 1}', "from the runner"], seen
            assert await inst.read_file(inst.home / ".config/tool/settings.json") == b'{"a": 1}'
            with pytest.raises(FileNotFoundError):
                await inst.read_file("no-such-file")
            # A folder in, programs staying executable; and out again.
            await inst.copy_in(tree, inst.state_dir / "tools")
            ran = await inst.exec(f"{inst.state_dir}/tools/bin/hello")
            assert ran.stdout.strip() == "hello from /anpord/state/tools/bin/hello", ran
            await inst.copy_out(inst.state_dir / "tools", tmp_path / "back")
            assert (tmp_path / "back" / "bin" / "hello").read_text().startswith("#!/bin/sh")
            # The view: the workspace as it is now, a file removed inside gone from it too.
            await inst.exec("rm sub/old.txt; echo new > sub/new.txt")
            view = await inst.workspace_view()
            assert view != inst.workspace and view.is_dir()
            got = sorted(str(p.relative_to(view)) for p in view.rglob("*"))
            assert got == ["notes.txt", "seed.txt", "sub", "sub/new.txt"], got
            await inst.exec("rm notes.txt")
            assert not (await inst.workspace_view() / "notes.txt").exists()
            # stdin from bytes: no file on the host to open.
            proc = await inst.spawn(["cat"], env=inst.environment(), stdin=b"the prompt\n")
            out, _ = await proc.communicate()
            assert out == b"the prompt\n"
        finally:
            await inst.close()
        assert inst.container not in containers()

    run(body())


def test_the_size_cap_holds_the_copied_workspace(image: str, shm_root: Path, copying: None) -> None:
    async def body() -> None:
        inst = await DockerSandbox(tmp_root=shm_root).open(
            spec(sandbox="docker", image=image, options={"sandbox_size": "16M"}))
        try:
            done = await inst.exec("dd if=/dev/zero of=big bs=1M count=40 2>&1; echo done")
            assert "No space left on device" in done.stdout, done
            reason = await inst.limit_exceeded()
            assert reason is not None and reason.startswith("workspace size limit reached: 16 MiB"), reason
        finally:
            await inst.close()

    run(body())


def test_a_coding_clis_settings_and_sign_in_files_are_written_and_read_inside(image: str, tmp_root: Path, copying: None) -> None:
    from anpord.harnesses.coding import provider_sign_in
    from anpord.mocks._register import register_mcp
    from anpord.proxy._clis import for_cli
    from anpord.proxy._service import ProxyHandle

    async def body() -> None:
        inst = await DockerSandbox(tmp_root=tmp_root).open(spec(sandbox="docker", image=image))
        try:
            config = inst.state_dir / "mocks" / "mcp.json"
            servers = {"crm": {"command": "/usr/bin/python3", "args": ["-I", "relay.py"]}}
            await inst.write_file(config, json.dumps({"mcpServers": servers}).encode())
            assert await register_mcp("gemini", str(config), inst.home, inst) == ()
            assert await register_mcp("codex", str(config), inst.home, inst) == ()
            proxy = ProxyHandle("http://127.0.0.1:4321", {"GEMINI_API_KEY": "stand-in"})
            env, _ = await for_cli("gemini", proxy, {}, inst.home, inst)
            assert env["GEMINI_API_KEY"] == "stand-in"
            seen = await inst.exec("cat $HOME/.gemini/settings.json; echo; cat $HOME/.codex/config.toml")
            settings = json.loads(seen.stdout.split("\n[")[0])
            assert settings == {"mcpServers": servers, "security": {"auth": {"selectedType": "gemini-api-key"}}}
            assert "[mcp_servers.crm]" in seen.stdout, seen
            # A sign-in stored inside counts; one on the host at the same path would not be seen.
            assert not (await provider_sign_in("openai/gpt-5", inst.home, inst.workspace, inst)).signed_in
            await inst.exec("mkdir -p $HOME/.local/share/opencode && echo '{\"openai\": {}}' > $HOME/.local/share/opencode/auth.json")
            assert (await provider_sign_in("openai/gpt-5", inst.home, inst.workspace, inst)).signed_in
        finally:
            await inst.close()

    run(body())


RESULT = json.dumps({"type": "result", "subtype": "success", "is_error": False, "result": "done",
                     "session_id": "s1", "num_turns": 1})
CONFIG = """
from anpord import Variant, define_eval_config
config = define_eval_config(
    timeout=90,
    variants=[Variant(name="copied", sandbox="docker", image={image!r}, harness={harness!r},
                      options={options!r})],
)
"""


def test_a_coding_agent_run_finds_its_cli_prompt_and_mcp_servers_inside(make_project: Any, image: str, tmp_path: Path) -> None:
    run_root = tmp_path / "trials"
    run_root.mkdir()
    project = make_project({
        "evals/coding.eval.py": eval_file(f'''
            from anpord.mocks import cli_mock, mcp_mock, mcp_tool

            @define_eval(source=files({{"seed.txt": "seed"}}), mocks=[
                cli_mock("claude", default={{"stdout": {RESULT + chr(10)!r}}}),
                mcp_mock("crm", tools=[mcp_tool("lookup", result="gold")]),
            ])
            async def coding(t):
                await t.send("look the customer up")
                call = t.mock("claude").calls[0]
                t.check(call["stdin"], equals("look the customer up"))
                argv = call["argv"]
                t.check(argv[argv.index("--mcp-config") + 1], equals("/anpord/state/mocks/mcp.json"))
                t.check(t.reply, equals("done"))
                {END}
        '''),
    }, config=CONFIG.format(image=image, harness="claude", options={"check_credentials": False}))
    run_ = project.run(timeout=240, env={"ANPORD_SANDBOX_TMP": str(run_root), COPY_ENV: "1"})
    assert run_.code == 0, run_.output
    assert run_.result("coding")["verdict"] == "passed", run_.result("coding")
    assert _orphans() == [] and list(run_root.iterdir()) == []


def test_a_command_agents_files_and_the_checks_see_the_copied_workspace(make_project: Any, image: str, tmp_path: Path) -> None:
    run_root = tmp_path / "trials"
    run_root.mkdir()
    project = make_project({
        "evals/boxed.eval.py": eval_file("""
            from anpord.verifiers import command

            async def validate(context):
                inside = await context.exec("cat seed.txt; echo; cat $HOME/turns")
                return (
                    inside.stdout.split() == ["seed", "1"]
                    and context.read_text("out.txt").strip() == "/anpord/workspace"  # the copied-out view
                    and context.files_changed() == ["out.txt"],
                    f"saw {inside.stdout!r}, changed {context.files_changed()!r}",
                )

            case = define_eval(
                prompt="pwd > out.txt; echo 1 > $HOME/turns; cat $ANPORD_PROMPT_FILE",
                source=files({"seed.txt": "seed"}),
                validate=[command("test -s out.txt && test $PWD = /anpord/workspace"), validate],
            )
        """),
    }, config=CONFIG.format(image=image, harness='command:bash -c "$ANPORD_PROMPT"', options={}))
    run_ = project.run(timeout=240, env={"ANPORD_SANDBOX_TMP": str(run_root), COPY_ENV: "1"})
    assert run_.code == 0, run_.output
    line = run_.result("boxed")
    assert line["verdict"] == "passed", line
    assert _orphans() == [] and list(run_root.iterdir()) == []


def test_without_the_setting_the_folders_are_bound(image: str, tmp_root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(COPY_ENV, raising=False)

    async def body() -> None:
        inst = await DockerSandbox(tmp_root=tmp_root).open(spec(sandbox="docker", image=image))
        try:
            assert inst.host_paths and inst.container is not None
            assert str(inst.workspace) in _bound_sources(inst.container)
        finally:
            await inst.close()

    run(body())


FIX_CASE = """
from anpord.verifiers import command

test = define_eval(
    prompt="printf 'def add(a, b):\\\\n    return a + b\\\\n' > calc.py; rm old.txt; echo fixed",
    source=files({{"calc.py": "def add(a, b):\\\\n    return a - b\\\\n", "old.txt": "x"}}),
    validate=command("python3 -c 'import calc; assert calc.add(2, {b}) == {sum}' && test ! -e old.txt"),
)
"""


def test_a_regrade_restores_the_workspace_the_agent_left_inside_the_container(make_project: Any, image: str) -> None:
    import subprocess

    from project_support import anpord_command, run_env

    project = make_project({"evals/fix.eval.py": eval_file(FIX_CASE.format(b=2, sum=4))},
                           config=CONFIG.format(image=image, harness='command:bash -c "$ANPORD_PROMPT"', options={}))
    env = {COPY_ENV: "1"}
    run_ = project.run(timeout=240, env=env)
    assert run_.code == 0 and run_.result("fix")["verdict"] == "passed", run_.output
    run_id = run_.run_dir.name  # type: ignore[union-attr]
    # Today's check, and no agent (the prompt is never run again): it reads what the agent left.
    project.write({"evals/fix.eval.py": eval_file(FIX_CASE.format(b=3, sum=5))})
    done = subprocess.run([*anpord_command(), "regrade", run_id, "--json"], cwd=project.folder,
                          env=run_env(env), capture_output=True, text=True, timeout=240, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    doc = json.loads(done.stdout)
    assert [r["verdict"] for c in doc["cells"] for r in c["results"]] == ["passed"], doc["cells"]
