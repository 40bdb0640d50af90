# The code kernel's driver (src/process/code_kernel.h): an IPython
# InteractiveShell in this process, driven over its stdin and stdout.
#
# It is not a file of the sandbox: the kernel starts as
#   python3 -c 'import sys,json;_stockade=json.loads(sys.stdin.buffer.raw.readline());exec(_stockade["driver"])'
# and this source arrives in that first line, {"driver", "nonce"} (it is
# embedded in the binary), so nothing of the build tree runs in the sandbox.
#
# Protocol. Requests come one JSON object a line on the original stdin:
#   {"id": N, "code": "..."}
# Every frame this driver writes goes to a copy of the original stdout as
#   \x1e TAG <json> \x1e          (TAG = "STK" + the nonce of the first line)
# The JSON is ASCII (ensure_ascii), so it never holds \x1e itself. Frames:
#   {"type": "ready", "ipython": "8.5.0"}            once, at start
#   {"type": "fatal", "message": "..."}              instead of ready, then exit
#   {"type": "stream", "name": "stdout"|"stderr", "text": "..."}
#   {"type": "display", "data": {mime: value}}       display() of a cell
#   {"type": "done", "id": N, "executionCount": K, "result": {mime: value}|null,
#    "error": {"name", "value", "traceback"}|null}
# The user's sys.stdout and sys.stderr are capture objects that become
# stream frames; bytes written to fd 1 or 2 below Python (a subprocess, a C
# library) reach the same pipes outside any frame, and the supervisor takes
# them as the running call's output. The user's stdin is /dev/null.
#
# SIGINT interrupts a running cell (KeyboardInterrupt, as Jupyter does) and
# is ignored between cells; one that arrives while a frame is being written
# is raised once the frame is whole, so no frame is ever cut.
import base64
import json
import os
import signal
import sys
import threading
import time

_tag = None
_out_fd = None
_write_lock = threading.RLock()
_state = {"running": False, "writing": False, "deferred": False}
_STREAM_FLUSH_BYTES = 64 * 1024
_STREAM_FLUSH_SECONDS = 0.05
_STREAM_FRAME_CHARS = 1 << 20  # text per stream frame (ASCII-escaped, at most 6 bytes a character)
_MAX_FRAME_BYTES = 30 << 20  # under the supervisor's kMaxFrameBytes (code_kernel.h)


def _encode(obj):
    return b"\x1e" + _tag + b" " + json.dumps(obj, ensure_ascii=True, default=repr).encode("ascii") + b"\x1e"


def _frame(obj):
    data = _encode(obj)
    if len(data) > _MAX_FRAME_BYTES and obj.get("type") in ("display", "done"):
        # A result the supervisor would not take: said instead of sent.
        key = "data" if obj["type"] == "display" else "result"
        note = "(a result of %d bytes was dropped: one may take %d)" % (len(data), _MAX_FRAME_BYTES)
        data = _encode(dict(obj, **{key: {"text/plain": note}}))
    # Only the main thread is ever interrupted (Python runs signal handlers
    # there): while it writes, an interrupt waits for the frame to be whole.
    main = threading.current_thread() is threading.main_thread()
    with _write_lock:
        if main:
            _state["writing"] = True
        try:
            view = memoryview(data)
            while view:
                n = os.write(_out_fd, view)
                view = view[n:]
        finally:
            if main:
                _state["writing"] = False
    if main and _state["deferred"]:
        _state["deferred"] = False
        if _state["running"]:
            raise KeyboardInterrupt


def _on_sigint(signum, frame):
    __tracebackhide__ = True  # noqa: F841 -- IPython leaves this frame out of the traceback
    if _state["writing"]:
        _state["deferred"] = True
        return
    if _state["running"]:
        raise KeyboardInterrupt


class _Capture:
    """A text stream whose writes become stream frames (batched briefly)."""

    encoding = "utf-8"
    errors = "replace"

    def __init__(self, name):
        self.name = name
        self._buf = []
        self._size = 0
        self._last = time.monotonic()
        self._lock = threading.RLock()

    def write(self, text):
        if not isinstance(text, str):
            raise TypeError("write() argument must be str, not " + type(text).__name__)
        with self._lock:
            self._buf.append(text)
            self._size += len(text)
            if self._size >= _STREAM_FLUSH_BYTES or time.monotonic() - self._last >= _STREAM_FLUSH_SECONDS:
                self.flush()
        return len(text)

    def writelines(self, lines):
        for line in lines:
            self.write(line)

    def flush(self):
        with self._lock:
            self._last = time.monotonic()
            if not self._buf:
                return
            text = "".join(self._buf)
            self._buf = []
            self._size = 0
            for at in range(0, len(text), _STREAM_FRAME_CHARS):
                _frame({"type": "stream", "name": self.name, "text": text[at:at + _STREAM_FRAME_CHARS]})

    def isatty(self):
        return False

    def readable(self):
        return False

    def writable(self):
        return True

    def seekable(self):
        return False

    def fileno(self):
        return 1 if self.name == "stdout" else 2

    @property
    def closed(self):
        return False


def _bundle(data):
    out = {}
    for mime, value in (data or {}).items():
        if isinstance(value, (bytes, bytearray)):
            value = base64.b64encode(bytes(value)).decode("ascii")
        out[str(mime)] = value
    return out


def _main():
    global _tag, _out_fd
    _tag = ("STK" + str(_stockade["nonce"])).encode("ascii")
    sys.argv = [""]
    # The protocol's own descriptors, not inherited by anything the user runs.
    in_fd = os.dup(0)
    _out_fd = os.dup(1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    sys.stdin = open(os.devnull, "r")
    requests = os.fdopen(in_fd, "rb", buffering=0)
    signal.signal(signal.SIGINT, _on_sigint)

    try:
        os.environ.setdefault("IPYTHONDIR", os.path.join(os.environ.get("TMPDIR", "/tmp"), "stockade-ipython"))
        from IPython.core.displayhook import DisplayHook
        from IPython.core.displaypub import DisplayPublisher
        from IPython.core.interactiveshell import InteractiveShell
        import IPython
        from traitlets.config import Config
    except BaseException as e:  # noqa: BLE001 -- any failure to import is reported, never raised
        _frame({"type": "fatal", "message": "IPython is not importable by " + sys.executable + ": " + repr(e)})
        return 3

    cell = {"result": None, "error": None}

    class Hook(DisplayHook):
        def start_displayhook(self):
            pass

        def write_output_prompt(self):
            pass

        def write_format_data(self, format_dict, md_dict=None):
            cell["result"] = _bundle(format_dict)

        def finish_displayhook(self):
            pass

    class Publisher(DisplayPublisher):
        def publish(self, data, metadata=None, source=None, *, transient=None, update=False, **kwargs):
            sys.stdout.flush()
            sys.stderr.flush()
            _frame({"type": "display", "data": _bundle(data)})

        def clear_output(self, wait=False):
            pass

    class Shell(InteractiveShell):
        displayhook_class = Hook
        display_pub_class = Publisher

        def _showtraceback(self, etype, evalue, stb):
            cell["error"] = {
                "name": getattr(etype, "__name__", str(etype)),
                "value": str(evalue),
                "traceback": "\n".join(stb) if isinstance(stb, list) else str(stb),
            }

    config = Config()
    config.HistoryManager.enabled = False
    config.InteractiveShell.colors = "NoColor"
    config.InteractiveShell.xmode = "Context"
    try:
        shell = Shell.instance(config=config)
    except BaseException as e:  # noqa: BLE001
        _frame({"type": "fatal", "message": "IPython's shell did not start: " + repr(e)})
        return 3
    sys.stdout = _Capture("stdout")
    sys.stderr = _Capture("stderr")
    _frame({"type": "ready", "ipython": IPython.__version__})

    pending = b""
    current = None
    while True:
        try:
            while b"\n" not in pending:
                chunk = requests.read(1 << 16)
                if not chunk:
                    return 0
                pending += chunk
            line, pending = pending.split(b"\n", 1)
            request = json.loads(line)
            current = request.get("id")
            cell["result"] = None
            cell["error"] = None
            _state["running"] = True
            try:
                outcome = shell.run_cell(request["code"], store_history=True)
            finally:
                _state["running"] = False
            shell.exit_now = False
            sys.stdout.flush()
            sys.stderr.flush()
            error = cell["error"]
            if error is None and not outcome.success:
                failure = outcome.error_in_exec or outcome.error_before_exec
                error = {"name": type(failure).__name__, "value": str(failure), "traceback": ""}
            _frame({
                "type": "done",
                "id": request.get("id"),
                "executionCount": shell.execution_count - 1,
                "result": cell["result"],
                "error": error,
            })
            current = None
        except KeyboardInterrupt:
            # A SIGINT just after its cell's code ended: the cell still gets its answer.
            _state["running"] = False
            if current is not None:
                _frame({"type": "done", "id": current, "executionCount": shell.execution_count - 1,
                        "result": cell["result"],
                        "error": cell["error"] or {"name": "KeyboardInterrupt", "value": "", "traceback": ""}})
                current = None


sys.exit(_main())
