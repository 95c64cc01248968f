"""Small rooms (STYLE.md): no module of the package passes 400 lines, no folder holds more than 25
modules; one that does is split by job."""

from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "backend" / "switchboard"
LIMIT = 400


def test_no_module_passes_the_line_limit():
    lines = {path.relative_to(PACKAGE).as_posix(): len(path.read_text().splitlines()) for path in PACKAGE.rglob("*.py")}
    over = {name: n for name, n in lines.items() if n > LIMIT}
    assert over == {}, f"split these by job: {over}"


FOLDER_LIMIT = 25


def test_no_folder_holds_more_than_25_modules():
    """Packages that show the design: a folder past 25 modules is split into subpackages by job
    (tools/oauth/, tools/servers/, chat/calls/, ...), not grouped by name prefix."""
    counts = {
        folder.relative_to(PACKAGE).as_posix() or ".": len(list(folder.glob("*.py")))
        for folder in [PACKAGE, *(p for p in PACKAGE.rglob("*") if p.is_dir() and p.name != "__pycache__")]
    }
    over = {name: n for name, n in counts.items() if n > FOLDER_LIMIT}
    assert over == {}, f"split these into subpackages by job: {over}"
