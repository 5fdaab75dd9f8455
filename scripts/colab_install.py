"""Install this checkout into the running Python (Colab), keeping the torch already there.

Each notebook's first code cell clones the repository in Colab and runs this script:
``pip install -e <checkout>[notebooks]`` with a constraint pinning the installed torch,
so that pip does not replace Colab's CUDA build.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path


def install(checkout: Path) -> list[str]:
    import torch

    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as pins:
        pins.write(f"torch=={torch.__version__}\n")
    cmd = [sys.executable, "-m", "pip", "install", "--quiet", "-c", pins.name, "-e", f"{checkout}[notebooks]"]
    subprocess.run(cmd, check=True)
    return cmd


if __name__ == "__main__":
    install(Path(__file__).resolve().parents[1])
