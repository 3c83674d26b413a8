"""The README's sentence on α at long T on the GPU states what the benchmark files give: the seconds on the H200
(bench/results/gpu/measure_long.txt) and on CPU (bench/results/measure_speed_cpu.txt) at T = 8,192, and each as a
multiple of its own forward."""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GPU, CPU = ROOT / 'bench' / 'results' / 'gpu' / 'measure_long.txt', ROOT / 'bench' / 'results' / 'measure_speed_cpu.txt'


def row(path:Path, T:int) -> dict[str, str]:
    "The table row of T in a bench/measure_speed.py result, by its header's column names."
    lines = path.read_text().splitlines()
    header = next(l for l in lines if l.split()[:2] == ['T', 'forward']).split()
    names = ['T', 'forward s', 'measure s', 'measure/fwd'] + header[7:]   # 'forward s' and 'measure s' are two words
    values = next(l for l in lines if l.split()[:1] == [str(T)]).split()
    return dict(zip(names, values))


def test_the_readme_states_alpha_on_the_gpu_from_the_benchmark_files():
    m = re.search(r'α at T = ([\d,]+) took ([\d.]+) s there against ([\d.]+) s on CPU, ([\d.]+)× faster in seconds, but '
                  r'(\d+)× the model\'s forward against ([\d.]+)× on CPU', (ROOT / 'README.md').read_text())
    assert m, 'the README has no sentence on α on the GPU'
    T = int(m[1].replace(',', ''))
    gpu, cpu = row(GPU, T), row(CPU, T)
    assert (m[2], m[3]) == (gpu['measure s'], cpu['measure s'])
    assert m[4] == f"{float(cpu['measure s']) / float(gpu['measure s']):.1f}"
    assert m[5] == f"{float(gpu['measure/fwd'].rstrip('x')):.0f}" and m[6] == cpu['measure/fwd'].rstrip('x')
    assert 'ran far slower there than on CPU' not in (ROOT / 'README.md').read_text()
