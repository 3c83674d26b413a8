"""The fresh hostile probe of issue 20 (58 cases; these are the ones that found something): links inside a run folder,
a config edited after training, damaged or copied files, output files that cannot be written, flags that were ignored.
Each case failed on e97e58e — a wrong number without a word, a read outside the folders given, another run's files
deleted, or a traceback — and must now be refused with one line, before any work where the work would be lost."""
import hashlib, json, os, shutil
from pathlib import Path

import pytest
from _cli import sink_nb_cli

DEMO = ('--config', 'demo-softmax', 'steps=20', 'eval_every=10', 'checkpoint_every=10', 'probe_n=16',
        'corpus_args={n: 1536}', 'progress=false')


def cli(*args, timeout=300):
    return sink_nb_cli(*args, timeout=timeout)


def one_line_error(res, needle):
    assert res.returncode != 0, res.stdout[-1000:]
    assert 'Traceback' not in res.stderr and needle in res.stderr, res.stderr[-2000:]


def tree(folder):
    "Every file under `folder` with its checksum (links as their target)."
    return {str(p.relative_to(folder)): (os.readlink(p) if p.is_symlink() else hashlib.sha256(p.read_bytes()).hexdigest())
            for p in sorted(Path(folder).rglob('*')) if p.is_file() or p.is_symlink()}


@pytest.fixture(scope='module')
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp('runs')
    for seed in (0, 1):
        res = cli('train', *DEMO, f'seed={seed}', f'out_dir={root / f"seed{seed}"}')
        assert res.returncode == 0, res.stderr[-2000:]
    return root


@pytest.fixture
def copy(runs, tmp_path):
    def make(seed=0):
        out = tmp_path / f'copy{seed}'
        shutil.copytree(runs / f'seed{seed}', out, symlinks=True)
        return out
    return make


@pytest.mark.parametrize('name', ['metrics.jsonl', 'config.yaml', 'eval.safetensors', 'checkpoints/step-20'])
def test_a_file_linked_into_a_run_is_never_read(runs, copy, name):
    run = copy()
    target = runs / 'seed1' / name
    shutil.rmtree(run / name) if (run / name).is_dir() else (run / name).unlink()
    os.symlink(target, run / name)
    one_line_error(cli('compare', run), 'link')


def test_a_config_edited_after_training_is_refused(copy):
    run = copy()
    config = (run / 'config.yaml').read_text()
    assert '  attention: softmax\n' in config
    (run / 'config.yaml').write_text(config.replace('  attention: softmax\n', '  attention: sigmoid\n'))
    one_line_error(cli('compare', run), "model.attention: 'softmax' -> 'sigmoid'")


def test_a_damaged_result_is_measured_again(runs, copy):
    run = copy()
    (run / 'result.safetensors').write_bytes((run / 'result.safetensors').read_bytes()[:100])
    damaged, whole = cli('compare', run, '--json', run.parent / 'd.json'), cli('compare', runs / 'seed0', '--json',
                                                                            run.parent / 'w.json')
    assert damaged.returncode == 0 and 'cannot be read' in damaged.stderr, damaged.stderr[-2000:]
    rows = [json.loads((run.parent / f).read_text())['rows'][0] for f in ('d.json', 'w.json')]
    assert rows[0]['sink1@0.3'] == rows[1]['sink1@0.3'] and rows[0]['step'] == rows[1]['step'] == 20


def test_a_checkpoint_copied_by_hand_is_no_checkpoint(copy):
    run = copy()
    shutil.copytree(run / 'checkpoints' / 'step-20', run / 'checkpoints' / 'step-90')
    from sink_nb.runs import Run
    assert Run(run).checkpoints == [10, 20] and Run(run).status == 'complete at step 20'


def test_resume_through_a_linked_checkpoints_folder_touches_nothing(runs, copy):
    run, other = copy(0), copy(1)
    shutil.rmtree(run / 'checkpoints'); os.symlink(other / 'checkpoints', run / 'checkpoints')
    before = tree(other)
    one_line_error(cli('train', *DEMO, 'steps=40', 'resume=true', 'allow_changes=[steps]', f'out_dir={run}'), 'link')
    assert tree(other) == before


def test_a_yaml_alias_bomb_is_refused_at_once(copy):
    run = copy()
    bomb = 'a: &a [x, x, x, x, x, x, x, x, x]\n' + ''.join(
        f'{c}: &{c} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]\n' for p, c in zip('abcdefgh', 'bcdefghi'))
    config = (run / 'config.yaml').read_text().replace('train:\n', 'train:\n  corpus_args:\n'
                                                       + ''.join('    ' + l + '\n' for l in bomb.splitlines()), 1)
    config = config.replace('  corpus_args:\n    n: 1536\n', '', 1)
    (run / 'config.yaml').write_text(config)
    one_line_error(cli('compare', run, timeout=60), 'YAML aliases')


def test_outputs_that_cannot_be_written_are_refused_before_the_work(runs):
    for flag in ('--json', '--chart'):
        res = cli('compare', runs / 'seed0', flag, '/proc/sink_nb_nope.json')
        assert res.returncode == 2 and 'cannot write in /proc' in res.stderr and 'variant' not in res.stdout, res.stderr
    res = cli('stream', runs / 'seed0', '--T', '32', '--window', '8', '--json', '/proc/x.json')
    assert res.returncode == 2 and 'cannot write in /proc' in res.stderr, res.stderr


def test_an_empty_path_and_a_huge_integer_are_refused(runs):
    res = cli('compare', '')
    assert res.returncode == 2 and 'an empty path' in res.stderr, res.stderr
    res = cli('stream', runs / 'seed0', '--T', '9' * 23, '--window', '16')
    assert res.returncode == 2 and 'expected an integer >= 2' in res.stderr and 'Traceback' not in res.stderr


def test_compare_shows_sink_at_the_eps_asked_for(runs):
    res = cli('compare', runs / 'seed0', '--eps', '0.2', '0.4')
    assert res.returncode == 0, res.stderr
    head, row = res.stdout.splitlines()[:2]
    assert head.split()[4:6] == ['sink1@0.2', 'sink1@0.4'], head
    assert row.split()[6] != '-' and row.split()[9] != '-', row                  # the means at 0.2 and 0.4


def test_a_run_that_cannot_start_leaves_no_folder(tmp_path):
    one_line_error(cli('train', *DEMO, 'seq_len=99999999999999999999', f'out_dir={tmp_path / "long"}'),
                   "is longer than the model's block_size")
    assert not (tmp_path / 'long').exists()
    import importlib.util
    if importlib.util.find_spec('tensorboard') is None:
        one_line_error(cli('train', *DEMO, 'tensorboard=true', f'out_dir={tmp_path / "tb"}'),
                       'needs the tensorboard package')
        assert not (tmp_path / 'tb').exists()


def test_mitigations_refuses_foreign_files_in_a_seed_folder_before_training(runs, tmp_path):
    out = tmp_path / 'mitigations'
    (out / 'softmax1').mkdir(parents=True)
    shutil.copytree(runs / 'seed0', out / 'softmax1' / 'seed0')
    (out / 'softmax1' / 'seed0' / 'notes.txt').write_text('mine')
    res = cli('mitigations', '--steps', '50', '--seeds', '1', '--jobs', '1', '--only', 'softmax', 'softmax1',
              '--out', out, timeout=60)
    one_line_error(res, 'notes.txt')
    assert not (out / 'softmax').exists() and (out / 'softmax1' / 'seed0' / 'notes.txt').read_text() == 'mine'


def test_prepare_refuses_an_out_that_is_a_link(tmp_path):
    src = tmp_path / 'a.txt'; src.write_text('One paragraph of text.\n\nAnother paragraph here.\n')
    assert cli('prepare', src, '--out', tmp_path / 'corpus', '--val-docs', '1', '--quiet').returncode == 0
    os.symlink(tmp_path / 'corpus', tmp_path / 'link')
    before = tree(tmp_path / 'corpus')
    one_line_error(cli('prepare', src, '--out', tmp_path / 'link', '--overwrite', '--val-docs', '1', '--quiet'),
                   'is a link to')
    assert (tmp_path / 'link').is_symlink() and tree(tmp_path / 'corpus') == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ['a.txt', 'corpus', 'link']


def test_outputs_never_overwrite_what_is_read(runs, copy, tmp_path):
    run = copy()
    before = tree(run)
    res = cli('compare', run, '--json', run / 'config.yaml')
    assert res.returncode == 2 and 'is inside the run folder' in res.stderr, res.stderr
    res = cli('compare', run, '--json', tmp_path / 'f', '--chart', tmp_path / 'f')
    assert res.returncode == 1 and 'name the same file' in res.stderr, res.stderr
    res = cli('stream', run, '--T', '32', '--window', '8', '--chart', run / 'eval.safetensors')
    assert res.returncode == 2 and 'is inside the run folder' in res.stderr, res.stderr
    model = run.parent / 'model'; model.mkdir(); (model / 'config.json').write_text('{}')   # an input that is no run
    res = cli('stream', model, '--T', '32', '--window', '8', '--chart', model / 'chart.svg')
    assert res.returncode == 1 and 'which is read' in res.stderr, res.stderr
    assert tree(run) == before


def test_another_runs_evaluation_data_is_refused(runs, copy):
    run = copy(0)
    (run / 'result.safetensors').unlink()
    shutil.copy(runs / 'seed1' / 'eval.safetensors', run / 'eval.safetensors')     # a copy, not a link
    one_line_error(cli('compare', run), 'drawn for other settings')


def test_a_config_edit_with_an_invented_change_record_is_refused(copy):
    run = copy()
    config = (run / 'config.yaml').read_text().replace('  attention: softmax\n', '  attention: sigmoid\n')
    config += 'changes:\n- step: 20\n  changes:\n    attention: [softmax, sigmoid]\n'
    (run / 'config.yaml').write_text(config)
    one_line_error(cli('compare', run), 'is a model of other settings')


def test_planted_pipes_deep_nesting_and_huge_pids_are_one_line(copy):
    run = copy()
    with open(run / 'metrics.jsonl', 'a') as f: f.write('[' * 20000 + ']' * 20000 + '\n')
    res = cli('compare', run, timeout=60)
    assert res.returncode == 0 and 'nested too deeply' in res.stderr and 'Traceback' not in res.stderr, res.stderr
    (run / '.lock').write_text(json.dumps(dict(pid=10 ** 30, host='elsewhere-host')))
    assert cli('compare', run, timeout=60).returncode == 0
    (run / '.lock').unlink(); os.mkfifo(run / '.lock')
    res = cli('compare', run, timeout=60)
    assert res.returncode == 0 and 'running' not in res.stdout, res.stdout
    (run / '.lock').unlink()
    (run / '.sink_nb_run.json').unlink(); os.mkfifo(run / '.sink_nb_run.json')     # the manifest a pipe: never read
    one_line_error(cli('train', *DEMO, 'overwrite=true', f'out_dir={run}', timeout=60), 'removes only what sink_nb wrote')


def test_outputs_never_land_in_a_run_or_write_through_a_link(runs, copy, tmp_path):
    run, other = copy(0), copy(1)
    before = tree(other)
    res = cli('compare', run, '--json', other / 'config.yaml')              # another run's file
    assert res.returncode == 2 and 'is inside the run folder' in res.stderr, res.stderr
    os.link(run / 'config.yaml', tmp_path / 'h.json')                       # a hard link to a run's own file
    config = (run / 'config.yaml').read_text()
    assert cli('compare', run, '--json', tmp_path / 'h.json').returncode == 0
    assert (run / 'config.yaml').read_text() == config and tree(other) == before


def test_an_evaluation_set_without_or_with_a_bad_stamp_is_said(copy):
    from sink_nb.checkpoints import load_tree, save_tree
    run = copy()
    (run / 'result.safetensors').unlink()
    tree_ = load_tree(run / 'eval.safetensors')
    save_tree(tree_ | dict(settings='[1, 2]'), run / 'eval.safetensors')
    one_line_error(cli('compare', run), 'its settings stamp is not readable')
    del tree_['settings']; save_tree(tree_, run / 'eval.safetensors')
    res = cli('compare', run)
    assert res.returncode == 0 and 'records no settings' in res.stderr, res.stderr


def test_a_checkpoint_write_cut_short_does_not_block_the_resume(copy):
    run = copy()
    (run / 'checkpoints' / 'step-30.tmp').mkdir(); (run / 'checkpoints' / 'step-30.tmp' / '.tmpw5ymJC').write_bytes(b'\0')
    res = cli('train', *DEMO, 'steps=30', 'resume=true', 'allow_changes=[steps]', f'out_dir={run}')
    assert res.returncode == 0, res.stderr[-2000:]
    assert not (run / 'checkpoints' / 'step-30.tmp').exists() and (run / 'checkpoints' / 'step-30').is_dir()
