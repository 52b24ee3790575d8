"""Imported first by every script: makes the rmbench package (workflow/rmbench) importable.

Snakemake puts this folder on the script's sys.path; the package sits one folder up.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
