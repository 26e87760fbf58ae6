# agentnest session helper (Python): runs inside the sandbox as the sandbox
# user, started by the monitor through the exec path as
# `python3 -u -c <this file>`.  fd 0 is a unix socket to the host; fds 1
# and 2 are the host's pipes for the code's stdout and stderr.
# Protocol (agentnest/session.h): netstrings of JSON documents.
#   helper -> host  {"type":"ready","python":"3.11.2"} once at start
#   host -> helper  {"id":N,"code":"..."}
#   helper -> host  {"type":"idle"} when SIGINT finds it waiting for a request
#   helper -> host  {"id":N,"type":"result","status":0|1,
#                    "value":null|{"repr":"...","json":"<JSON text>"|null},
#                    "error":null|{"type","message","traceback"}}
# Globals persist between calls in one namespace.  SIGINT (the host's
# timeout) raises KeyboardInterrupt in the running code; outside a call it
# is ignored.  Written for AgentNest; standard library only.
import ast, json, os, signal, sys, traceback

_chan = os.dup(0)                     # non-inheritable (PEP 446)
_null = os.open(os.devnull, os.O_RDONLY)
os.dup2(_null, 0)
os.close(_null)
sys.stdin = open(os.devnull)


def _send(doc):
    data = json.dumps(doc).encode("ascii")
    frame = b"%d:%s," % (len(data), data)
    # never interrupted half-way: the host would lose the framing
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        while frame:
            frame = frame[os.write(_chan, frame):]
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


class _Reader:
    def __init__(self):
        self.buf = b""

    def frame(self):
        while True:
            i = self.buf.find(b":")
            if i > 0:
                n = int(self.buf[:i])
                if len(self.buf) >= i + 1 + n + 1:
                    data = self.buf[i + 1:i + 1 + n]
                    self.buf = self.buf[i + 2 + n:]
                    return json.loads(data.decode("utf-8"))
            try:
                chunk = os.read(_chan, 65536)
            except KeyboardInterrupt:
                _send({"type": "idle"})   # interrupted while waiting: say so
                continue
            if not chunk:
                return None
            self.buf += chunk


_globals = {"__name__": "__main__", "__builtins__": __builtins__}


def _value(v):
    if v is None:
        return None
    try:
        r = repr(v)
    except BaseException as e:        # a broken __repr__
        r = "<repr failed: %s>" % type(e).__name__
    try:
        j = json.dumps(v, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError, RecursionError, OverflowError):
        j = None
    return {"repr": r, "json": j}


def _error(e):
    tb = e.__traceback__
    # drop this helper's own frames: the traceback starts in the code
    while tb is not None and tb.tb_frame.f_code.co_filename != "<session>":
        tb = tb.tb_next
    text = "".join(traceback.format_exception(type(e), e, tb))
    return {"type": type(e).__name__, "message": str(e), "traceback": text}


def _run(code):
    tree = ast.parse(code, "<session>", "exec")
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = ast.Expression(tree.body.pop().value)
    exec(compile(tree, "<session>", "exec"), _globals)
    if last is not None:
        return eval(compile(last, "<session>", "eval"), _globals)
    return None


def main():
    signal.signal(signal.SIGINT, signal.default_int_handler)
    _send({"type": "ready", "python": sys.version.split()[0]})
    reader = _Reader()
    while True:
        req = reader.frame()
        if req is None:
            return
        result = {"id": req.get("id"), "type": "result", "status": 0, "value": None, "error": None}
        try:
            result["value"] = _value(_run(req.get("code", "")))
        except BaseException as e:    # SystemExit and KeyboardInterrupt too: the session lives on
            result["status"] = 1
            try:
                result["error"] = _error(e)
            except BaseException:
                result["error"] = {"type": type(e).__name__, "message": "", "traceback": ""}
        while True:                   # a late SIGINT must not lose the result
            try:
                try:
                    sys.stdout.flush()
                    sys.stderr.flush()
                except OSError:
                    pass
                _send(result)
                break
            except KeyboardInterrupt:
                continue


main()
