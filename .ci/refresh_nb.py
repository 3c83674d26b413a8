"""Execute one notebook in place, as `.ci/refresh` does: widget state not stored, `#| cuda` cells skipped on a machine
without CUDA (their saved outputs are kept), every other cell run, `#| slow` included."""
import sys
from pathlib import Path

import nbformat
import torch
from nbclient import NotebookClient


class _Client(NotebookClient):
    "Skips the cells a machine cannot run, leaving their saved outputs as they are."
    skip = ('#| cuda', '#|cuda') if not torch.cuda.is_available() else ()

    async def async_execute_cell(self, cell, cell_index, execution_count=None, store_history=True):
        if cell.cell_type == 'code' and cell.source.lstrip().startswith(self.skip): return cell
        return await super().async_execute_cell(cell, cell_index, execution_count, store_history)


path = Path(sys.argv[1])
nb = nbformat.read(path, as_version=4)
_Client(nb, timeout=1800, kernel_name='python3', store_widget_state=False,
        resources={'metadata': {'path': str(path.parent)}}).execute()
nbformat.write(nb, path)
