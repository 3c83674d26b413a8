"The `sink-nb` console script as a user runs it: the demo end to end, prepare, train, exit codes, files written."
import argparse, dataclasses, importlib, inspect, json, os, re, subprocess, sys, time
from pathlib import Path

import pytest

from sink_nb.runs import Run
from _cli import sink_nb_cli

SINK_NB = Path(sys.executable).parent / 'sink-nb'


def run(*args, timeout=600, **env):
    return sink_nb_cli(*args, timeout=timeout, env=env)


def test_entry_point_installed():
    assert SINK_NB.exists(), 'pip install -e . must create the sink-nb console script'
    out = run('--version')
    assert out.returncode == 0 and out.stdout.startswith('sink_nb ')


def test_the_demo_trains_both_twins_in_two_processes_with_progress(tmp_path):
    "`sink-nb demo` with its progress lines, short: both twins at once, each with its own lines, its table and files."
    out = run('demo', '--steps', '50', '--out', tmp_path)                           # with its progress lines
    assert out.returncode == 0, out.stderr
    assert '2 at a time, 1 thread(s) each' in out.stdout
    progress = [l for l in out.stdout.splitlines() if ' step ' in l and 'val loss' in l]
    assert {l.split(' step ')[0] for l in progress} == {'demo-softmax seed 0', 'demo-sigmoid seed 0'}, progress
    header = next(l for l in out.stdout.splitlines() if l.split()[:1] == ['variant'])
    assert header.split() == ['variant', 'steps', 'val_loss', 'final_sink1', 'peak_sink1', 'peak_step', 'mean_sink1',
                              'onset>10', 'seconds']
    summary = json.loads((tmp_path / 'summary.json').read_text())
    for variant in summary:
        assert Run(tmp_path / variant).status == 'complete at step 50', Run(tmp_path / variant).status
    # the full 600-step demo's numbers, chart and README copy: tests/test_readme_examples.py, on the README's own run
    again = run('demo', '--steps', '50', '--out', tmp_path, '--quiet', '--jobs', '1')  # a second demo replaces the first
    assert again.returncode == 0, again.stderr



_TRACKER_HOOK = """import os, multiprocessing.resource_tracker as rt, multiprocessing.util as mu
def _logged(kind, send):
    def call(name, rtype):
        with open(os.environ['SINK_NB_TRACKER_LOG'], 'a') as log:      # _exiting: in the exit handlers
            log.write(f'{os.getpid()} {kind} {name} {mu._exiting}\\n')
        return send(name, rtype)
    return call
rt.register, rt.unregister = _logged('REG', rt.register), _logged('UNREG', rt.unregister)
"""


def test_the_demo_in_a_terminal_ends_with_its_summary_and_leaves_no_semaphore_to_clean_up_at_exit(tmp_path):
    "stderr a terminal, as when a user types the command: tqdm bars in the workers, then the summary, then nothing."
    import pty, threading
    (tmp_path / 'hook').mkdir(); (tmp_path / 'hook' / 'sitecustomize.py').write_text(_TRACKER_HOOK)
    env = os.environ | {'PYTHONPATH': os.pathsep.join([str(tmp_path / 'hook'), os.environ.get('PYTHONPATH', '')]),
                        'SINK_NB_TRACKER_LOG': str(tmp_path / 'tracker.log')}
    terminal, side = pty.openpty()
    proc = subprocess.Popen([str(SINK_NB), 'demo', '--steps', '50', '--out', tmp_path / 'demo'], stdout=subprocess.PIPE,
                            stderr=side, text=True, env=env)
    os.close(side)
    err = []                                           # drained as it comes: a full terminal would stop the workers
    def drain():
        while True:
            try: chunk = os.read(terminal, 4096)
            except OSError: return                         # EIO: every writer (the resource tracker last) has gone
            if not chunk: return
            err.append(chunk)
    reader = threading.Thread(target=drain, daemon=True); reader.start()
    out, _ = proc.communicate(timeout=600)
    reader.join(30); os.close(terminal)
    err = b''.join(err).decode(errors='replace')
    assert proc.returncode == 0, err[-2000:]
    assert 'Warning' not in err and 'leaked' not in err, err[-2000:]            # nothing after the summary
    last = out.splitlines()[-3:]
    assert [l.split(':')[0] for l in last[:2]] == ['softmax', 'sigmoid'] and last[2].startswith('total '), out
    log = [l.split() for l in (tmp_path / 'tracker.log').read_text().splitlines()]
    made = {name: pid for pid, kind, name, _ in log if kind == 'REG'}
    assert set(made.values()) == {str(proc.pid)}, log                  # only the command's process makes a semaphore
    freed = {name for _, kind, name, exiting in log if kind == 'UNREG' and exiting == 'False'}
    assert set(made) <= freed, log                                     # each freed while it runs, none left for exit

def test_prepare_then_train_on_the_shards(tmp_path):
    out = run('prepare', 'sherlock', '--out', tmp_path / 'shards', '--val-docs', '10', '--quiet')
    assert out.returncode == 0, out.stderr
    assert 'train:' in out.stdout and 'val:' in out.stdout
    again = run('prepare', 'sherlock', '--out', tmp_path / 'shards', '--quiet')
    assert again.returncode != 0 and '--overwrite' in again.stderr + again.stdout
    out = run('train', '--config', 'demo-sigmoid', f'corpus={tmp_path / "shards"}', 'tokenizer=bytes', 'vocab_size=258',
              'steps=10', 'eval_every=5', 'probe_n=4', f'out_dir={tmp_path / "r"}', 'progress=false')
    assert out.returncode == 0, out.stderr
    assert 'Sink_1 =' in out.stdout


def test_train_a_shipped_config_with_overrides(tmp_path):
    out = run('train', '--config', 'demo-sigmoid', 'steps=20', 'eval_every=10', f'out_dir={tmp_path / "r"}',
              'progress=false', 'corpus_args={n: 2000}', 'lr=3e-3', 'min_lr=3e-4')
    assert out.returncode == 0, out.stderr
    assert 'Sink_1 =' in out.stdout
    lines = Run(tmp_path / 'r').metrics()
    assert [l.step for l in lines] == [0, 10, 20] and lines[1].lr > 0


def test_train_list_and_help_say_what_each_config_and_key_is():
    listing = run('train', '--list')
    assert listing.returncode == 0
    row = next(l for l in listing.stdout.splitlines() if l.startswith('60m-wd-0.5 '))
    assert '41.08' in row and 'weight decay 0.5' in row
    assert '0.44*' in next(l for l in listing.stdout.splitlines() if l.startswith('60m-sigmoid '))
    helptext = run('train', '--help').stdout
    assert 'model.attention' in helptext and 'train.grad_clip = 1.0' in helptext and 'finite number >= 0' in helptext


def test_a_paper_config_offline_fails_fast_and_names_what_is_missing(tmp_path):
    t0 = time.perf_counter()
    out = run('train', '--config', '60m-default', f'out_dir={tmp_path / "r"}', HF_HUB_OFFLINE='1')
    assert time.perf_counter() - t0 < 15                                              # the CLI starts, checks, stops
    assert out.returncode == 1 and len(out.stderr.strip().splitlines()) == 1, out.stderr
    for needed in ('EleutherAI/gpt-neox-20b', 'sail/regmix-data-sample', 'corpus=PATH', 'scale=cpu'): assert needed in out.stderr
    assert not (tmp_path / 'r').exists()


def test_a_cpu_scaled_paper_config_runs_and_is_not_compared_to_the_paper(tmp_path):
    out = run('train', '--config', '60m-sigmoid', 'scale=cpu', 'steps=20', 'eval_every=10', 'probe_n=4',
              f'out_dir={tmp_path / "r"}', 'progress=false', f'data_dir={tmp_path / "data"}')
    assert out.returncode == 0, out.stderr
    assert 'paper (60M, 5B tokens of the Pile sample, 20k steps): 0.44' in out.stdout and 'not comparable' in out.stdout


@pytest.mark.parametrize('args, flag, allowed', [
    (['demo', '--steps', '1'], '--steps', '>= 50'),
    (['demo', '--steps', 'many'], '--steps', '>= 50'),
    (['demo', '--jobs', '0'], '--jobs', '>= 1'),
    (['measure', 'x', '--eps', '0'], '--eps', '(0, 1)'),
])
def test_bad_arguments_name_the_flag(args, flag, allowed):
    out = run(*args)
    assert out.returncode == 2
    assert flag in out.stderr and allowed in out.stderr, out.stderr


def test_bad_overrides_name_the_key(tmp_path):
    out = run('train', '--config', 'demo-softmax', 'trian.steps=5', f'out_dir={tmp_path / "r"}')
    assert out.returncode == 1 and "unknown section 'trian'" in out.stderr
    out = run('train', '--config', 'demo-softmax', 'grad_clip=-1', f'out_dir={tmp_path / "r"}')
    assert out.returncode == 1 and '`grad_clip` must be a finite number >= 0' in out.stderr


def test_unknown_command_lists_the_commands():
    out = run('fly')
    assert out.returncode == 2 and 'demo' in out.stderr and 'train' in out.stderr and 'prepare' in out.stderr


@pytest.mark.parametrize('args', [['train', '--help'], ['train', '--list']])
def test_output_into_a_closed_pipe_stops_quietly(args):
    "`sink-nb train --help | head -1`: the reader is gone; no traceback, the exit status a shell gives `yes | head`."
    read, write = os.pipe()
    os.close(read)                             # closed before the first write: the broken pipe is certain, not a race
    try: out = subprocess.run([str(SINK_NB), *args], stdout=write, stderr=subprocess.PIPE, text=True, timeout=60)
    finally: os.close(write)
    assert out.stderr == '' and out.returncode == 141, (out.returncode, out.stderr)


# --- registries on the command line: names read from the registries, never copied out of them ---

MODULES = sorted(p for p in (Path(__file__).parent.parent / 'sink_nb').glob('*.py') if p.name != '_modidx.py')


def registry_choices() -> dict[str, list]:
    "'module.NAME' -> names of each registry the parser offers (found on the parser) and of those overrides name."
    from sink_nb import attention, positions, run_configs
    from sink_nb.cli import _parser
    from sink_nb.cli_models import RegistryChoices
    found = {}
    for sub in (a for a in _parser()._actions if isinstance(a, argparse._SubParsersAction)):
        for parser in sub.choices.values():
            for action in parser._actions:
                if isinstance(action.choices, RegistryChoices):
                    found[f'{action.choices.module}.{action.choices.attribute}'] = action.choices.names()
                for extra in vars(action).values():                        # a help text's %(NAME)s registry
                    if isinstance(extra, RegistryChoices): found[f'{extra.module}.{extra.attribute}'] = extra.names()
    return found | {'sink_nb.attention.ATTENTION_OPS': list(attention.ATTENTION_OPS),
                    'sink_nb.positions.POSITIONS': list(positions.POSITIONS),
                    'sink_nb.run_configs.list_configs()': run_configs.list_configs()}


def copied_lists(text:str, names) -> list[str]:
    "Runs of a registry's names in `text` written as a list ('a', 'b', 'c' / a, b or c): all of them, or at least 3."
    names = sorted((n for n in names if isinstance(n, str)), key=len, reverse=True)     # numbers (bits): not words
    if not names: return []
    alt = '|'.join(map(re.escape, names))
    runs = (rf"['\"](?:{alt})['\"](?:\s*,\s*['\"](?:{alt})['\"])+",
            rf"(?<![\w.-])(?:{alt})(?:(?:,| or| and|, or|, and) (?:{alt}))+(?![\w-])")
    found = [m.group(0) for run in runs for m in re.finditer(run, text)]
    return [f for f in found if len(set(re.findall(alt, f))) >= min(3, len(names))]


def test_the_copy_check_finds_a_copied_list():
    found = registry_choices()
    studies, settings = found['sink_nb.studies.CPU_STUDIES'], found['sink_nb.studies.STUDY_SETTINGS']
    assert copied_lists(f"help='{', '.join(studies[:3])}'", studies)                     # a list in a help text
    assert copied_lists(f"choices={tuple(studies[:3])!r}", studies)                       # a tuple of choices
    assert copied_lists(f"help='{studies[0]}, {studies[1]} or {studies[2]}'", studies)
    assert copied_lists(f"choices={tuple(settings)!r}", settings)                         # all of a short registry
    assert not copied_lists(f"default={list(studies[:2])!r}", studies)                    # a default of a few names
    assert not copied_lists("help='a study of sink_nb.studies.CPU_STUDIES: %(choices)s'", studies)


@pytest.mark.parametrize('module', MODULES, ids=lambda p: p.name)
def test_no_module_copies_registry_names(module):
    "No list of a registry's names is written out beside it: choices, help texts and loops read the registry."
    text = re.sub(r"['\"]\s*\n\s*f?['\"]", '', module.read_text())     # 'a, ' 'b' over two lines: one string
    registries = registry_choices()
    assert len(registries) >= 8, sorted(registries)                    # the parser's registries were found
    copies = {where: hits for where, names in registries.items()
              if where.split('.')[1] != module.stem and (hits := copied_lists(text, names))}   # not its own home
    assert not copies, f'{module.name} writes out names of {copies}'


@pytest.fixture
def late_entries():
    "One entry registered late in each registry a command reads, under names no one registers; removed again."
    from sink_nb import attention, head_stats, positions, stream, studies
    added = [(studies.CPU_STUDIES, 'zz-late-study-named-at-length-with-many-hyphens', {'softmax (demo)': {}}),
             (studies.STUDY_SETTINGS, 'zz-late-setting', dict(n_layer=1)),
             (head_stats.HEAD_STATISTICS, 'zz_late_stat', head_stats.HeadStat(
                 'zz_late_stat', 'a late statistic', lambda b: b.shares.amax(-1).sum(-1), lambda total, T: total / T)),
             (stream.POLICIES, 'zz-late-policy', dataclasses.replace(stream.POLICIES['window'], name='zz-late-policy')),
             (attention.ATTENTION_OPS, 'zz_late_op', dataclasses.replace(attention.ATTENTION_OPS['sigmoid'],
                                                                         name='zz_late_op')),
             (positions.POSITIONS, 'zz_late_pos', positions.POSITIONS['rope'])]
    done = []
    try:
        for registry, name, entry in added:
            assert name not in registry, f'{name} is registered already'
            registry[name] = entry; done.append((registry, name))
        yield {name for _, name, _ in added}
    finally:
        for registry, name in done: del registry[name]                  # only the test's own entries


def help_of(command:str, capsys) -> str:
    "`sink-nb COMMAND --help`, in this process, with its lines joined; wide, so argparse never breaks a name at a hyphen."
    from unittest import mock
    from sink_nb.cli import main
    with mock.patch.dict(os.environ, COLUMNS='100000'), pytest.raises(SystemExit) as stop: main([command, '--help'])
    assert stop.value.code == 0
    return ' '.join(capsys.readouterr().out.split())


def test_an_entry_registered_late_is_a_choice_and_its_command_lists_it(late_entries, capsys):
    from sink_nb.cli import _parser
    from sink_nb.run_configs import load_run_config
    parse = _parser().parse_args
    study = parse(['study', 'zz-late-study-named-at-length-with-many-hyphens', '--setting', 'zz-late-setting'])
    assert (study.name, study.setting) == ('zz-late-study-named-at-length-with-many-hyphens', 'zz-late-setting')
    assert parse(['measure', 'm', '--stats', 'zz_late_stat', 'attn_entropy']).stats == ['zz_late_stat', 'attn_entropy']
    assert parse(['stream', 'm', '--policies', 'sinks', 'zz-late-policy']).policies == ['sinks', 'zz-late-policy']
    assert load_run_config('demo-softmax', ['attention=zz_late_op'])[0].attention == 'zz_late_op'   # `train` overrides
    for command, names in (('study', ['zz-late-study-named-at-length-with-many-hyphens', 'zz-late-setting', 'optimization']),
                           ('measure', ['zz_late_stat', 'attn_entropy']), ('stream', ['zz-late-policy', 'sinks']),
                           ('train', ["'zz_late_op'", "'zz_late_pos'", "'softmax'", "'rope'"])):
        said = help_of(command, capsys)
        assert all(n in said for n in names), (command, [n for n in names if n not in said])


@pytest.mark.parametrize('argv, registry', [
    (['study', 'no-such-study'], 'sink_nb.studies.CPU_STUDIES'),
    (['study', 'loss', '--setting', 'no-such-setting'], 'sink_nb.studies.STUDY_SETTINGS'),
    (['measure', 'm', '--stats', 'no_such_stat'], 'sink_nb.head_stats.HEAD_STATISTICS'),
    (['stream', 'm', '--policies', 'no-such-policy'], 'sink_nb.stream.POLICIES'),
])
def test_an_unknown_name_is_refused_with_the_live_registry(late_entries, argv, registry, capsys):
    from sink_nb.cli import main
    with pytest.raises(SystemExit) as stop: main(argv)
    err = capsys.readouterr().err
    assert stop.value.code == 2 and f"invalid choice: {argv[-1]!r}" in err, err
    names = registry_choices()[registry]
    assert any(n in late_entries for n in names) and all(repr(n) in err for n in names), err   # the late one too


@pytest.mark.parametrize('argv, says', [
    (['report', 'm', '--window', '8'], '--window sets the eviction measurement, which only --evict runs'),
    (['report', 'm', '--sinks', '2'], '--sinks sets the eviction measurement, which only --evict runs'),
    (['report', 'm', '--window', '8', '--sinks', '0'], 'set the eviction measurement'),    # both named: below
    (['report', ''], 'MODEL is empty: give a hub id, folder'),
    (['report', '  '], 'MODEL is empty: give a hub id, folder'),
])
def test_report_refuses_eviction_flags_without_evict_and_an_empty_model(argv, says, tmp_path, monkeypatch):
    "Issue 58 lows. Before: --window/--sinks without --evict were ignored; '' said 'inside , which is read'."
    from sink_nb.cli import main
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as stop: main(argv)
    assert str(stop.value).startswith('sink-nb report: ') and says in str(stop.value), stop.value
    assert all(flag in str(stop.value) for flag in ('--window', '--sinks') if flag in argv), stop.value   # any order
    assert list(tmp_path.iterdir()) == []                                     # nothing measured, nothing written


def test_corpus_help_says_what_it_downloads_and_where(capsys):
    "Issue 58 low. Before: --help did not say that hundreds of MB of .deb files go to ~/.cache, outside --out."
    said = help_of('corpus', capsys)
    assert 'about 604 MB' in said and '~/.cache/sink_nb/debs' in said and 'outside --out' in said, said


def test_library_errors_are_not_rewritten_by_each_command():
    "Issue 57 item 5. Before: run_stream, run_trajectory, prepare and corpus each replaced `sinks` by --sinks, ..."
    for module in (p for p in MODULES if p.name in ('cli.py', 'cli_models.py')):
        assert not re.findall(r"str\(e\)\.replace\(", module.read_text()), module.name    # `as_flags` names them


def _options():
    "(command, action) of every argument of every command."
    from sink_nb.cli import _parser
    for sub in (a for a in _parser()._actions if isinstance(a, argparse._SubParsersAction)):
        for command, parser in sub.choices.items():
            for action in parser._actions:
                if not isinstance(action, argparse._HelpAction): yield command, action


def test_as_flags_names_every_argument_as_its_flag():
    "`as_flags`' one rule: a positional is in POSITIONALS, and any other argument is set by --NAME (- for _)."
    from sink_nb.cli_models import POSITIONALS, flag_of
    for command, action in _options():
        if action.option_strings: assert flag_of(action.dest) in action.option_strings, (command, action.dest)
        else: assert action.dest in POSITIONALS, (command, action.dest)


def test_flag_defaults_come_from_the_library_signature(monkeypatch):
    "Issue 57 item 5. Before: --window 256, --sinks 4, --every 1 were written again in the parser (a changed library "
    "default left the command line behind)."
    from sink_nb import checks, stream
    from sink_nb.cli import _parser
    def study(model, ids, window=99, sinks=7, policies=None, positions='cache', every=3, progress=False): pass
    monkeypatch.setattr(stream, 'stream_study', study)
    monkeypatch.setattr(checks, 'source_defaults', lambda module, function: None)   # the signature of what is imported
    args = _parser().parse_args(['stream', 'm'])
    assert (args.window, args.sinks, args.every) == (99, 7, 3)
    assert _parser().parse_args(['stream', 'm', '--window', '8']).window == 8


def test_help_shows_the_library_default(capsys):
    said = help_of('stream', capsys)
    assert 'recent keys kept (default 256)' in said and 'LibraryDefault' not in said, said


def test_every_library_default_reads_its_signature():
    "A flag's `LibraryDefault` names an argument its function has (a renamed argument fails here, not in --help)."
    from sink_nb.cli_models import LibraryDefault
    defaults = [a.default for _, a in _options() if isinstance(a.default, LibraryDefault)]
    defaults += [v for _, a in _options() for v in vars(a).values() if isinstance(v, LibraryDefault)]   # help-only
    assert len(defaults) >= 10
    for default in defaults:                                  # read from the source, as the imported function has it
        owner = importlib.import_module(default.module)
        for part in default.function.split('.'):
            owner = getattr(owner, part)
        assert default.value() == inspect.signature(owner).parameters[default.argument].default, default
