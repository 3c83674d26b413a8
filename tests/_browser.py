"What the browser tests share: Debian's chromium, its flags, and skipping (or failing under CI) when parts are missing."
import os
from pathlib import Path

import pytest

CHROMIUM = '/usr/bin/chromium'
FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update',
         '--disable-sync', '--no-first-run']


def require_browser(test:str, modules:tuple):
    "Skip `test` when chromium or a python module is missing; under CI that is a failure (.ci/test installs them)."
    missing = [] if Path(CHROMIUM).exists() else [f'{CHROMIUM} (apt-get install chromium)']
    for mod in modules:
        try: __import__(mod)
        except ImportError: missing.append(f'python package {mod}')
    if not missing: return
    if os.environ.get('CI'): pytest.fail(f'CI is set but {test} needs: {", ".join(missing)} (.ci/test installs them)')
    pytest.skip(f'{test} needs: {", ".join(missing)}')


# A JS function expression, (svg, i) => facts, that measures one chart as the browser drew it: its box, every text's box,
# the tick labels of each axis (rotated or not) and the mark groups that draw nothing. Pasted into a page script.
MEASURE_SVG = r"""(svg, i) => {
    const box = r => ({l: r.left, t: r.top, r: r.right, b: r.bottom, w: r.width, h: r.height});
    const frame = box(svg.getBoundingClientRect());
    const texts = Array.from(svg.querySelectorAll('text')).filter(t => t.textContent.trim() && t.getClientRects().length)
      .map(t => ({s: t.textContent.trim(), ...box(t.getBoundingClientRect())}));
    const axes = Array.from(svg.querySelectorAll('g.role-axis-label')).map(g =>
      Array.from(g.querySelectorAll('text')).filter(t => t.textContent.trim() && t.getClientRects().length)
        .map(t => ({s: t.textContent.trim(), angle: (t.getAttribute('transform') || '').includes('rotate'),
                    ...box(t.getBoundingClientRect())})));
    const empty = Array.from(svg.querySelectorAll('g.role-mark')).filter(g => g.childElementCount === 0).length;
    return {i, frame, texts, axes, empty};
  }"""
SLACK = 1.0                                                   # px: anti-aliasing may spill a text box by a fraction


def _outside(t:dict, frame:dict) -> bool:
    return (t['l'] < frame['l'] - SLACK or t['t'] < frame['t'] - SLACK or t['r'] > frame['r'] + SLACK
            or t['b'] > frame['b'] + SLACK)


def _overlap(a:dict, b:dict, gap:float=2.0) -> bool:
    "Boxes closer than `gap` px (touching labels read as one number: '180200')."
    return min(a['r'], b['r']) - max(a['l'], b['l']) > -gap and min(a['b'], b['b']) - max(a['t'], b['t']) > -gap


def chart_problems(name:str, charts:list[dict]) -> list[str]:
    "What is wrong with the charts of one page (MEASURE_SVG's facts), as sentences naming the page and the chart."
    bad = []
    for c in charts:
        f = c['frame']
        if c.get('empty'): bad.append(f'{name}: chart {c["i"]}: {c["empty"]} mark group(s) draw nothing (a field name Vega misreads?)')
        for t in c['texts']:
            if _outside(t, f):
                bad.append(f'{name}: chart {c["i"]}: text {t["s"]!r} at ({t["l"]:.0f}, {t["t"]:.0f})–({t["r"]:.0f}, {t["b"]:.0f}) '
                           f'leaves its SVG box ({f["l"]:.0f}, {f["t"]:.0f})–({f["r"]:.0f}, {f["b"]:.0f})')
        for labels in c['axes']:
            flat = [t for t in labels if not t['angle']]
            for a, b in zip(flat, flat[1:]):
                if _overlap(a, b): bad.append(f'{name}: chart {c["i"]}: tick labels {a["s"]!r} and {b["s"]!r} overlap')
    return bad
