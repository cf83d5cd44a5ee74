"""llama.cpp's own `llama-server`: built once from the llama.cpp tree our bindings compile, run as a child.

Why here: the bench's peers (the server's greedy decoding, its n-gram speculation, a whole-file rewrite
through it) and the server backend's tests must run the same llama.cpp kernels as the in-process engine,
so the server is built from the very tree that llama-cpp-python's source distribution vendors
(`vendor/llama.cpp`), with the same portable flags (`GGML_NATIVE=OFF`: an AVX2/FMA/F16C baseline, so a
build made on one CPU runs on the next machine's). One helper owns the whole life of the process: a free
port, waiting for `/health`, the log shown when it fails, and the process group stopped at the end.

The build (~10 minutes on 2 cores) happens once per cache: `cache_dir()/llama-server/` keeps the source
tree, its cmake build folder and a marker naming the version and flags it was built with.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from contextlib import contextmanager
from pathlib import Path

from editllm.editor.errors import EditError
from editllm.editor.invariant import SERVER_ARGS, program_refusal, server_environment
from editllm.editor.modelspec import cache_dir

LLAMA_CPP_PYTHON = "0.3.36"  # the bindings' version pinned in pyproject.toml; the server comes from its tree
TARGETS = ("llama-server", "llama-batched-bench", "llama-bench")  # the peers, and the batching/kernel tables
# GGML_LLAMAFILE=OFF: llamafile's sgemm rounds by batch shape (editor.invariant) and serves no tensor of a K-quant
# model with flash attention on, so it is left out, as in the bindings the Makefile builds.
CMAKE_FLAGS = ("-DGGML_NATIVE=OFF", "-DGGML_LLAMAFILE=OFF",
               "-DLLAMA_CURL=OFF", "-DLLAMA_BUILD_TESTS=OFF", "-DLLAMA_BUILD_EXAMPLES=OFF",
               "-DLLAMA_BUILD_TOOLS=ON", "-DLLAMA_BUILD_SERVER=ON", "-DCMAKE_BUILD_TYPE=Release")


def server_root() -> Path:
    return cache_dir() / "llama-server"


def _tool(name: str) -> str | None:
    """A build tool from this environment's bin folder (the dev extra installs cmake and ninja from PyPI),
    else from PATH."""
    local = Path(sys.executable).parent / name
    return str(local) if local.exists() else shutil.which(name)


def _marker() -> str:
    return json.dumps({"llama-cpp-python": LLAMA_CPP_PYTHON, "flags": CMAKE_FLAGS, "targets": TARGETS})


def tool_path(name: str = "llama-server") -> Path:
    """Where a built llama.cpp tool lives in the cache (it may not exist yet)."""
    return server_root() / "src" / "build" / "bin" / name


def built() -> bool:
    marker = server_root() / "built.json"
    return marker.exists() and marker.read_text() == _marker() and all(tool_path(t).exists() for t in TARGETS)


def server_binary(build: bool = True, log=None) -> Path:
    """The `llama-server` to run: `$EDITLLM_LLAMA_SERVER` when set, else the cached build (made now when
    `build` is true; about ten minutes on 2 cores)."""
    if os.environ.get("EDITLLM_LLAMA_SERVER"):
        path = Path(os.environ["EDITLLM_LLAMA_SERVER"])
        if not os.access(path, os.X_OK):
            raise EditError(f"EDITLLM_LLAMA_SERVER={path} is not an executable file")
        return path
    if not built():
        if not build:
            raise EditError("llama-server is not built yet (editllm.editor.llamaserver.build_tools builds it)")
        build_tools(log)
    return tool_path()


@contextmanager
def _locked(path: Path):
    """One build at a time per cache (two test processes, or a test and the bench)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _sdist(root: Path, log=None) -> Path:
    """llama-cpp-python's source distribution (it vendors llama.cpp), fetched once with pip."""
    found = sorted(root.glob(f"llama_cpp_python-{LLAMA_CPP_PYTHON}.tar.gz"))
    if found:
        return found[0]
    if log:
        log(f"downloading llama-cpp-python {LLAMA_CPP_PYTHON}'s source distribution (for llama.cpp's tree)")
    with tempfile.TemporaryDirectory(dir=root) as tmp:
        # the sdist of this one package: `--no-binary :all:` reached pip's isolated build environment too, which
        # then compiled cmake from source to read the sdist's metadata (20+ minutes on 2 cores, session 27)
        cmd = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", "llama-cpp-python",
               "-d", tmp, f"llama-cpp-python=={LLAMA_CPP_PYTHON}"]
        done = subprocess.run(cmd, capture_output=True, text=True)
        got = sorted(Path(tmp).glob("llama_cpp_python-*.tar.gz"))
        if not got:
            tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no file"]
            raise EditError(f"cannot download llama-cpp-python {LLAMA_CPP_PYTHON}'s sdist: {tail[0]}")
        dest = root / got[0].name
        os.replace(got[0], dest)
    return dest


def _run(cmd: Sequence[str], log_file: Path, cwd: Path) -> None:
    with open(log_file, "a") as out:
        out.write("$ " + " ".join(cmd) + "\n")
        out.flush()
        done = subprocess.run(list(cmd), cwd=cwd, stdout=out, stderr=subprocess.STDOUT)
    if done.returncode != 0:
        tail = log_file.read_text(errors="replace").strip().splitlines()[-20:]
        sys.stderr.write("\n".join(tail) + "\n")
        raise EditError(f"building llama.cpp's tools failed (exit {done.returncode}); full log: {log_file}")


def build_tools(log=None) -> Path:
    """Build `TARGETS` from the vendored llama.cpp tree into the cache, once (locked, marker written last)."""
    root = server_root()
    root.mkdir(parents=True, exist_ok=True)
    with _locked(root / ".lock"):
        if built():
            return tool_path()
        cmake = _tool("cmake")
        if cmake is None:
            raise EditError("building llama-server needs cmake (pip install cmake, or the system's package)")
        (root / "built.json").unlink(missing_ok=True)
        sdist = _sdist(root, log)
        src = root / "src"
        shutil.rmtree(src, ignore_errors=True)
        prefix = f"llama_cpp_python-{LLAMA_CPP_PYTHON}/vendor/llama.cpp/"
        with tarfile.open(sdist) as tar:
            members = [m for m in tar.getmembers() if m.name.startswith(prefix) and m.name != prefix.rstrip("/")]
            for m in members:
                m.name = m.name[len(prefix):]
            # the "data" filter where this Python has it (3.11.4 on): a bare extractall on 3.11.2 (Debian 12's)
            tar.extractall(src, members=members, **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))
        log_file = root / "build.log"
        log_file.write_text("")
        if log:
            log(f"building llama.cpp's {', '.join(TARGETS)} under {root} (once; ~10 minutes on 2 cores)")
        ninja = _tool("ninja")
        generator = ["-G", "Ninja", f"-DCMAKE_MAKE_PROGRAM={ninja}"] if ninja else []
        _run([cmake, "-S", ".", "-B", "build", *generator, *CMAKE_FLAGS], log_file, src)
        _run([cmake, "--build", "build", "-j", str(os.cpu_count() or 1), "--target", *TARGETS], log_file, src)
        (root / "built.json").write_text(_marker())
    return tool_path()


def free_port() -> int:
    """A port nothing listens on now (the OS picks it); the server binds it a moment later."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LlamaServer:
    """One `llama-server` child process on a free local port; use as a context manager.

    `args` are llama-server's own flags (e.g. `["--spec-type", "ngram-simple"]`, `["-c", "8192"]`). Its
    output goes to a log file that is shown (last lines) when it fails to start or dies.
    """

    def __init__(self, model: str | Path, args: Sequence[str] = (), threads: int | None = None,
                 binary: Path | None = None, startup_timeout: float = 120.0, batch_invariant: bool = False) -> None:
        """`batch_invariant`: the kernels whose logits do not depend on the batch (`editor.invariant`), as the
        local engine's `batch_invariant` runs them: then both write the same tokens."""
        self.model = Path(model)
        self.batch_invariant = batch_invariant
        self.args = list(args) + (list(SERVER_ARGS) if batch_invariant else [])
        self.threads = threads or os.cpu_count() or 1
        self.binary = binary
        self.startup_timeout = startup_timeout
        self.proc: subprocess.Popen | None = None
        self.port = 0
        self.log_path: Path | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def log_tail(self, lines: int = 30) -> str:
        if self.log_path is None or not self.log_path.exists():
            return ""
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])

    name = "llama-server"  # in the log file's name and the error
    searched_lines = 30  # log lines searched for a port taken by another process
    shown_lines = 30  # log lines shown when it fails

    def command(self) -> list[str]:
        """The server's command line on `self.port` (a subclass runs another server the same way)."""
        self.binary = self.binary or server_binary()  # found (or built) once, not per attempt
        return [str(self.binary), "-m", str(self.model), "--host", "127.0.0.1", "--port", str(self.port),
                "-t", str(self.threads), "-tb", str(self.threads), *self.args]

    def environment(self) -> dict[str, str] | None:
        """The server's environment: this process's, without editllm's passive OpenMP default (meant for
        torch; llama.cpp's decode steps are 1.6× slower with it: `editor.waitpolicy`)."""
        from editllm.editor.waitpolicy import user_environment

        return server_environment(user_environment(), self.batch_invariant)

    def start(self) -> LlamaServer:
        fd, log = tempfile.mkstemp(prefix=f"{self.name}-", suffix=".log")
        self.log_path = Path(log)
        env = self.environment()
        for _attempt in range(3):  # a port taken between free_port() and bind(): try another
            self.port = free_port()
            cmd = self.command()
            with open(fd, "ab", closefd=False) as out:
                out.write(("$ " + " ".join(cmd) + "\n").encode())
            self.proc = subprocess.Popen(cmd, stdout=fd, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                         start_new_session=True, env=env)
            if self._wait_healthy():
                os.close(fd)
                self._check_kernels()
                return self
            if "address already in use" not in self.log_tail(self.searched_lines).lower():
                break
        os.close(fd)
        tail = self.log_tail(self.shown_lines)
        self.stop()
        sys.stderr.write(tail + "\n")
        raise EditError(f"{self.name} did not become healthy in {self.startup_timeout:.0f} s (log: {self.log_path})")

    def _check_kernels(self) -> None:
        """A batch-invariant server needs a build without llamafile's sgemm (`invariant.program_refusal`)."""
        if self.batch_invariant and (why := program_refusal(self.binary)):
            self.stop()
            raise EditError(f"{self.name} {self.binary}: {why}")

    def failed(self) -> bool:
        """Whether the server has said it cannot start though its process lives on (a subclass reads its log)."""
        return False

    def _wait_healthy(self) -> bool:
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None or self.failed():
                return False
            try:
                with urllib.request.urlopen(self.url + "/health", timeout=2) as r:
                    if r.status == 200:
                        return True
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass  # not listening yet, or 503 while the model loads
            time.sleep(0.2)
        return False

    def post(self, path: str, body: dict, timeout: float = 600.0) -> dict:
        """POST JSON to the server and return its JSON answer; a failure names the status and the log."""
        req = urllib.request.Request(self.url + path, data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                return json.loads(r.read())
        except urllib.error.HTTPError as exc:
            detail = exc.read().decode(errors="replace")[:300]
            raise EditError(f"llama-server {path}: HTTP {exc.code}: {detail}") from exc
        except (urllib.error.URLError, ConnectionError, TimeoutError) as exc:
            alive = self.proc is not None and self.proc.poll() is None
            if not alive:
                sys.stderr.write(self.log_tail() + "\n")
            raise EditError(f"llama-server {path}: {exc} ({'running' if alive else 'exited'})") from exc

    def stop(self) -> None:
        """Stop the whole process group: SIGTERM, then SIGKILL after 10 s."""
        if self.proc is None or self.proc.poll() is not None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        except ProcessLookupError:
            pass

    def __enter__(self) -> LlamaServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
        if self.log_path is not None and exc[0] is None:
            self.log_path.unlink(missing_ok=True)
