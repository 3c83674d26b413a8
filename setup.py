"Install sink_nb from settings.ini (nbdev 2 layout): `pip install -e '.[dev]'`."
from configparser import ConfigParser
import setuptools

cfg = ConfigParser(delimiters=['='])
cfg.read('settings.ini', encoding='utf-8')
cfg = cfg['DEFAULT']

def _reqs(key): return cfg.get(key, '').split()

licenses = {'apache2': ('Apache Software License 2.0', 'OSI Approved :: Apache Software License')}
statuses = ['1 - Planning', '2 - Pre-Alpha', '3 - Alpha', '4 - Beta', '5 - Production/Stable', '6 - Mature', '7 - Inactive']
py_versions = '3.10 3.11 3.12 3.13'.split()
lic = licenses[cfg['license']]
min_python = cfg['min_python']
extras = {name: _reqs(f'{name}_requirements') for name in ('explore', 'dev', 'flash')}
extras['all'] = extras['explore'] + extras['dev']  # flash-attn needs CUDA to build: never in 'all'

setuptools.setup(
    name=cfg['lib_name'],
    version=cfg['version'],
    description=cfg['description'],
    long_description=open('README.md', encoding='utf-8').read(),
    long_description_content_type='text/markdown',
    author=cfg['author'], author_email=cfg['author_email'],
    url=cfg['git_url'],
    license=lic[0],
    keywords=cfg['keywords'].split(),
    classifiers=[f'Development Status :: {statuses[int(cfg["status"])]}',
                 f'Intended Audience :: {cfg["audience"]}',
                 f'License :: {lic[1]}',
                 f'Natural Language :: {cfg["language"]}']
                + [f'Programming Language :: Python :: {v}' for v in py_versions[py_versions.index(min_python):]],
    packages=setuptools.find_packages(include=['sink_nb', 'sink_nb.*']),
    package_data={'sink_nb': ['configs/*.yaml', 'data_files/*.txt']},
    include_package_data=True,
    python_requires=f'>={min_python}',
    install_requires=_reqs('requirements'),
    extras_require=extras,
    entry_points={'console_scripts': cfg['console_scripts'].split(),
                  'nbdev': [f'{cfg["lib_path"]}={cfg["lib_path"]}._modidx:d']},
    zip_safe=False,
)
