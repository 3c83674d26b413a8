"Throwaway git repositories for the plan tests: every commit at a fixed time, so a test can place runs before or after."
import os, subprocess
from pathlib import Path

COMMITTED = '2026-01-01T12:00:00+00:00'                # the throwaway plan commit's committer time


def git(repo:Path, *args:str, when:str=COMMITTED) -> str:
    "Run git in `repo` as a throwaway author, author and committer dates `when`; its stdout, stripped."
    env = dict(os.environ, GIT_AUTHOR_NAME='t', GIT_AUTHOR_EMAIL='t@t', GIT_COMMITTER_NAME='t',
               GIT_COMMITTER_EMAIL='t@t', GIT_AUTHOR_DATE=when, GIT_COMMITTER_DATE=when)
    return subprocess.run(['git', '-C', str(repo), *args], capture_output=True, text=True, env=env,
                          check=True).stdout.strip()
