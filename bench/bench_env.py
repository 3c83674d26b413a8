"""Where a benchmark ran, as its results file records it: the machine, the versions and the load before and after.

A timing means little without the machine it ran on and what else ran there. Every `bench/` script opens its text
file with `header_lines` (three lines: `machine:`, `versions:`, `load average`) and puts `record` into its JSON, so a
reader can tell a quiet run from a busy one. `tests/test_bench_records.py` fails when a results file lacks them.

    load = Load()                      # the 1-, 5- and 15-minute load averages now
    ...                                # the measurement
    load.done()                        # and after it
    lines = header_lines(load, ('transformers',))
"""
import importlib.metadata, os, platform, shlex, statistics, sys, time
from pathlib import Path

QUIET_BUSY = 0.25   # more busy cores than this just before a run means something else was running


def cpu_model() -> str:
    "The CPU's model name from /proc/cpuinfo, else what `platform` knows."
    cpuinfo = Path('/proc/cpuinfo')
    if cpuinfo.exists():
        for line in cpuinfo.read_text().splitlines():
            if line.startswith('model name'): return line.split(':', 1)[1].strip()
    return platform.processor() or platform.machine()


def cpu_flags() -> set:
    cpuinfo = Path('/proc/cpuinfo')
    if not cpuinfo.exists(): return set()
    for line in cpuinfo.read_text().splitlines():
        if line.startswith('flags'): return set(line.split(':', 1)[1].split())
    return set()


def ram_gib() -> float|None:
    meminfo = Path('/proc/meminfo')
    if not meminfo.exists(): return None
    for line in meminfo.read_text().splitlines():
        if line.startswith('MemTotal:'): return int(line.split()[1]) / 2 ** 20
    return None


def machine() -> dict:
    "The CPU, its cores (those this process may use), RAM, AVX-512 and the OS."
    flags = cpu_flags()
    ram = ram_gib()
    return dict(cpu=cpu_model(), cores=len(os.sched_getaffinity(0)), ram_gib=round(ram, 1) if ram else None,
                avx512='avx512f' in flags, amx_bf16='amx_bf16' in flags, platform=platform.platform())


def versions(packages=()) -> dict:
    "Python, torch and transformers, and each of `packages`, at their installed versions ('not installed' if absent)."
    found = dict(python=platform.python_version())
    for name in ('torch', 'transformers', *packages):
        try: found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError: found[name] = 'not installed'
    return found


def busy_cores(seconds:float=0.5) -> float|None:
    "Cores busy over the next `seconds`, from /proc/stat (None where it is missing): what else runs right now."
    def sample():
        fields = [int(v) for v in Path('/proc/stat').read_text().splitlines()[0].split()[1:]]
        return sum(fields), fields[3] + fields[4]                         # all jiffies; idle + iowait
    if not Path('/proc/stat').exists(): return None
    total0, idle0 = sample()
    time.sleep(seconds)
    total1, idle1 = sample()
    busy = 1 - (idle1 - idle0) / max(total1 - total0, 1)
    return round(busy * len(os.sched_getaffinity(0)), 2)


class Load:
    """The 1-, 5- and 15-minute load averages and the cores busy (a 0.5 s sample) when made and when `done` is called.
    In a sequence of benchmarks the 1-minute average still holds the previous one; the busy cores say whether anything
    runs now, and decide 'quiet'."""
    def __init__(self):
        self.busy_before = busy_cores()
        self.before = os.getloadavg()
        self.after = self.busy_after = None

    def done(self):
        self.after = os.getloadavg()
        self.busy_after = busy_cores()
        return self

    def line(self) -> str:
        if self.after is None: raise RuntimeError("Load.line before Load.done: the load after the run is not known")
        before = ' '.join(f'{v:.2f}' for v in self.before)
        after = ' '.join(f'{v:.2f}' for v in self.after)
        busy = f"busy cores (0.5 s sample) before {self.busy_before}, after {self.busy_after}"
        quiet = 'quiet before' if (self.busy_before or 0) <= QUIET_BUSY else f'NOT quiet before (> {QUIET_BUSY} busy)'
        return f"load average (1/5/15 min): before {before}, after {after}; {busy}; {quiet}"

    def as_dict(self) -> dict:
        return dict(before=list(self.before), after=list(self.after) if self.after else None,
                    busy_cores_before=self.busy_before, busy_cores_after=self.busy_after)


def machine_line(found:dict|None=None) -> str:
    m = found or machine()
    ram = f", {m['ram_gib']:.0f} GiB RAM" if m['ram_gib'] else ''
    isa = 'AVX-512' if m['avx512'] else 'no AVX-512'
    return f"machine: {m['cpu']}, {m['cores']} cores{ram}, {isa}{', AMX-BF16' if m['amx_bf16'] else ''}; {m['platform']}"


def versions_line(packages=()) -> str:
    return 'versions: ' + ', '.join(f'{k} {v}' for k, v in versions(packages).items())


def header_lines(load:Load, packages=()) -> list[str]:
    "The three lines a results file opens with (after its command): machine, versions, load before and after."
    return [machine_line(), versions_line(packages), load.line()]


def record(load:Load, packages=()) -> dict:
    "The same facts for a JSON results file."
    return dict(machine=machine(), versions=versions(packages), load=load.as_dict())


def spread(values) -> dict:
    "Median, min, max and n of repeated measurements (a ratio against a peer is stated with all four)."
    values = list(values)
    if not values: raise ValueError("spread of no values")
    return dict(median=statistics.median(values), min=min(values), max=max(values), n=len(values))


def spread_text(values, digits:int=3) -> str:
    "'1.023x (1.011-1.040, n=5)': the median ratio and its range over repeats."
    s = spread(values)
    return f"{s['median']:.{digits}f}x ({s['min']:.{digits}f}-{s['max']:.{digits}f}, n={s['n']})"


class Output:
    """A benchmark's lines, printed as they come and written to a results file at the end: the command first, then
    `header_lines` (the load taken when this was made and when `write` is called), then the lines."""
    def __init__(self, script:str, argv=None, packages=()):
        self.command = f"python bench/{script} " + shlex.join(sys.argv[1:] if argv is None else argv)
        self.packages = packages
        self.load = Load()
        self.lines = []

    def say(self, line:str=''):
        print(line, flush=True)
        self.lines.append(line)

    def record(self) -> dict:
        "The command, machine, versions and load for the JSON file (the load after: now, if `write` has not run)."
        if self.load.after is None: self.load.done()
        return dict(command=self.command) | record(self.load, self.packages)

    def write(self, path) -> str:
        if self.load.after is None: self.load.done()
        text = '\n'.join([f'$ {self.command}', *header_lines(self.load, self.packages), *self.lines]) + '\n'
        if path: Path(path).write_text(text)
        return text


HEADER_STARTS = ('machine:', 'versions:', 'load average (1/5/15 min): before')


def record_problems(text:str, command:str|None=None) -> list[str]:
    """What a results text file lacks of the opening `Output.write` gives it: a `$ python bench/...` line (exactly
    `$ COMMAND` when `command` is given), then the machine, versions and load lines, in that order. Empty: all there."""
    lines = text.splitlines() + [''] * 4
    first = f'$ {command}' if command else '$ python bench/'
    opens = lines[0] == first if command else lines[0].startswith(first)
    problems = [] if opens else [f"the first line is {lines[0][:80]!r}, not {first!r}"]
    return problems + [f"no line starting {start!r}" for line, start in zip(lines[1:4], HEADER_STARTS)
                       if not line.startswith(start)]


if __name__ == '__main__':
    load = Load().done()
    print('\n'.join(header_lines(load, sys.argv[1:])))
