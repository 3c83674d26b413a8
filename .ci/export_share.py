"Strict share per chapter: an exported (non-import) cell whose very next cell is a code cell that is not exported."
import json,glob,sys
def is_export(src): return src.lstrip().startswith(('#| export', '#| exporti', '#|export'))
files = sys.argv[1:] or sorted(glob.glob('nbs/[0-9]*.ipynb'))
for f in files:
    cells=[(''.join(c['source']), c['cell_type']) for c in json.load(open(f))['cells']]
    ex=[i for i,(s,k) in enumerate(cells) if k=='code' and is_export(s) and 'import' not in (s.split('\n')+[''])[1]]
    ok=[i for i in ex if i+1<len(cells) and cells[i+1][1]=='code' and not is_export(cells[i+1][0])
        and not cells[i+1][0].lstrip().startswith('#| hide\nimport nbdev')]
    sizes=sorted(len(cells[i][0].splitlines())-1 for i in ex)
    print(f"{f:40s} {len(ok):3d}/{len(ex):3d} {100*len(ok)/max(len(ex),1):5.0f}%  median lines {sizes[len(sizes)//2] if sizes else 0}")
