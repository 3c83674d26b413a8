"""`sink-nb` as a user runs it, without a fresh interpreter's imports each time.

Most of the suite's CLI calls are refusals and 20-step toy runs: their own work takes a fraction of a second, while a
fresh `sink-nb` process spends 3-6 s of CPU importing torch, torch._dynamo (AdamW's first step imports it) and
transformers. `sink_nb_cli` hands each call to a *zygote*: a plain Python process (never pytest), started once per test
process and environment, that has imported those modules and forks a child per call. The child then runs exactly what
the console script runs, `sys.exit(main())`, and what the interpreter does on the way out: an uncaught exception's
traceback and status 1, non-daemon threads joined, atexit handlers run, the streams flushed; then it leaves with
`os._exit`, because tearing down every module the zygote imported takes 1.8 s and shows nothing. Its stdin is /dev/null,
its stdout and stderr files read back as `subprocess.run(..., capture_output=True, text=True)` reads its pipes. Tests
that signal a process (Ctrl-C, SIGTERM, kill -9) keep starting their own with `subprocess.Popen`.
"""
import atexit, json, os, select, signal, subprocess, sys, tempfile
from pathlib import Path

SINK_NB = Path(sys.executable).parent / 'sink-nb'
PRELOAD = ('torch', 'torch._dynamo', 'scipy.stats', 'sink_nb.cli', 'sink_nb.train', 'sink_nb.studies',
           'sink_nb.run_summaries', 'sink_nb.trajectory', 'sink_nb.report', 'sink_nb.hf', 'sink_nb.hf_load')
MAX_ZYGOTES = 3                                     # distinct environments kept warm; others start a fresh process

ZYGOTE = r'''
import importlib, json, os, sys
for name in sys.argv[1:]: importlib.import_module(name)
requests, replies = os.fdopen(os.dup(0), 'r'), os.dup(1)
os.write(replies, b'ready\n')
while True:
    line = requests.readline()
    if not line: os._exit(0)                        # the test process has gone
    call = json.loads(line)
    pid = os.fork()
    if pid == 0: break
    os.write(replies, f'{pid}\n'.encode())
    status = os.waitpid(pid, 0)[1]
    os.write(replies, f'{os.waitstatus_to_exitcode(status)}\n'.encode())
requests.close()
os.close(replies)
null = os.open(os.devnull, os.O_RDONLY)
os.dup2(null, 0)
os.close(null)
for fd, path in ((1, call['stdout']), (2, call['stderr'])):
    out = os.open(path, os.O_WRONLY | os.O_TRUNC)
    os.dup2(out, fd)
    os.close(out)
os.chdir(call['cwd'])
sys.argv = [call['script'], *call['args']]
import atexit, signal, threading
try:
    from sink_nb.cli import main
    raise SystemExit(main())                        # the console script's sys.exit(main())
except SystemExit as e:                             # and then what the interpreter does on the way out:
    status = e.code if isinstance(e.code, int) else 0 if e.code is None else 1
    if status == 1 and not isinstance(e.code, int): print(e.code, file=sys.stderr)     # a message: printed, status 1
except BaseException as e:                          # an uncaught exception: its traceback, status 1 (Ctrl-C: SIGINT)
    sys.excepthook(type(e), e, e.__traceback__)
    status = -signal.SIGINT if isinstance(e, KeyboardInterrupt) else 1
threading._shutdown()                               # non-daemon threads joined, then atexit, as Py_FinalizeEx does
atexit._run_exitfuncs()
for stream in (sys.stdout, sys.stderr): stream.flush()
if status == -signal.SIGINT:
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGINT)
os._exit(status & 0xFF)                             # without tearing down every module torch and transformers loaded
'''


class _Zygote:
    "One warm process for one environment: `call` runs `sink-nb ARGS` in a child of it."
    def __init__(self, env:dict):
        self.proc = subprocess.Popen([sys.executable, '-c', ZYGOTE, *PRELOAD], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
        self.unread = b''
        if self.line(None) != 'ready': raise RuntimeError('the sink-nb zygote did not start')

    def line(self, timeout:float|None) -> str|None:
        "The zygote's next line, or None when `timeout` seconds pass first (read unbuffered, so `select` sees it all)."
        fd = self.proc.stdout.fileno()
        while b'\n' not in self.unread:
            if not select.select([fd], [], [], timeout)[0]: return None
            chunk = os.read(fd, 4096)
            if not chunk: raise RuntimeError(f'the sink-nb zygote ended (status {self.proc.wait()})')
            self.unread += chunk
        line, _, self.unread = self.unread.partition(b'\n')
        return line.decode()

    def call(self, args:list, timeout:float|None, cwd:str) -> subprocess.CompletedProcess:
        with tempfile.TemporaryDirectory() as tmp:
            out, err = Path(tmp, 'stdout'), Path(tmp, 'stderr')
            out.touch()
            err.touch()
            request = dict(args=args, cwd=cwd, script=str(SINK_NB), stdout=str(out), stderr=str(err))
            self.proc.stdin.write((json.dumps(request) + '\n').encode())
            self.proc.stdin.flush()
            pid = int(self.line(None))
            code = self.line(timeout)
            if code is None:                                 # as subprocess.run does: kill the child, then raise
                os.kill(pid, signal.SIGKILL)
                self.line(None)
                raise subprocess.TimeoutExpired([str(SINK_NB), *args], timeout, out.read_text(), err.read_text())
            return subprocess.CompletedProcess([str(SINK_NB), *args], int(code), out.read_text(), err.read_text())

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(30)


_ZYGOTES:dict = {}


def sink_nb_cli(*args, timeout:float|None=300, env:dict|None=None, cwd=None) -> subprocess.CompletedProcess:
    "`sink-nb ARGS` in `cwd` (None: the current folder) with `os.environ | env`: its status, stdout and stderr as text."
    args, env, cwd = [str(a) for a in args], dict(os.environ, **(env or {})), str(cwd or os.getcwd())
    key = json.dumps({k: v for k, v in env.items() if k != 'PYTEST_CURRENT_TEST'}, sort_keys=True)   # set per test
    if key not in _ZYGOTES and len(_ZYGOTES) < MAX_ZYGOTES: _ZYGOTES[key] = _Zygote(env)
    if key not in _ZYGOTES:
        return subprocess.run([str(SINK_NB), *args], capture_output=True, text=True, timeout=timeout, env=env,
                              cwd=cwd)
    return _ZYGOTES[key].call(args, timeout, cwd)


@atexit.register
def _close_zygotes():
    for zygote in _ZYGOTES.values(): zygote.close()
