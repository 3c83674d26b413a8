"""Write README.md from nbs/index.ipynb without Quarto (nbdev_readme needs it): markdown cells as they are, code
cells as fenced python with their saved outputs, nbdev directives honoured (`hide`, `include: false`, `echo: false`,
`output: false`). `--check` exits 1 when README.md is not what the notebook gives."""
import json, re, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def directives(source):
    "nbdev `#| key: value` lines of a cell, and the source without them."
    found, body = {}, []
    for line in source.splitlines():
        if line.startswith('#|'):
            key, _, value = line[2:].strip().partition(':')
            found[key.strip()] = value.strip() or True
        else: body.append(line)
    return found, '\n'.join(body).strip('\n')


def output_text(out):
    if out['output_type'] == 'stream': return ''.join(out['text'])
    data = out.get('data', {})
    if 'text/markdown' in data: return None, ''.join(data['text/markdown'])
    return ''.join(data.get('text/plain', ''))


def _from_root(markdown:str) -> str:
    "Figure paths of nbs/index.ipynb (relative to nbs/) as the README at the root reads them."
    return re.sub(r'\]\(images/', '](nbs/images/', markdown)


def render(nb_path):
    nb = json.loads(Path(nb_path).read_text())
    parts = []
    for cell in nb['cells']:
        src = ''.join(cell['source'])
        if cell['cell_type'] == 'markdown': parts.append(_from_root(src.strip('\n'))); continue
        d, body = directives(src)
        if d.get('hide') or d.get('include') == 'false': continue
        if d.get('echo') != 'false' and body: parts.append(f'```python\n{body}\n```')
        if d.get('output') == 'false': continue
        for out in cell.get('outputs', []):
            text = output_text(out)
            if isinstance(text, tuple): parts.append(text[1].strip('\n'))
            elif text and text.strip(): parts.append(f'```\n{text.rstrip()}\n```')
    return '\n\n'.join(parts) + '\n'


def main(argv):
    text = render(ROOT / 'nbs' / 'index.ipynb')
    readme = ROOT / 'README.md'
    if '--check' in argv:
        if not readme.exists() or readme.read_text() != text:
            print('README.md differs from nbs/index.ipynb: run `python .ci/readme.py` and commit it'); return 1
        print('README.md matches nbs/index.ipynb'); return 0
    readme.write_text(text); print(f'wrote {readme}'); return 0


if __name__ == '__main__': sys.exit(main(sys.argv[1:]))
