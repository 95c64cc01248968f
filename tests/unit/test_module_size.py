"""Small rooms (STYLE.md): no module of the package passes 400 lines; one that does is split by job."""

from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "backend" / "switchboard"
LIMIT = 400


def test_no_module_passes_the_line_limit():
    lines = {path.relative_to(PACKAGE).as_posix(): len(path.read_text().splitlines()) for path in PACKAGE.rglob("*.py")}
    over = {name: n for name, n in lines.items() if n > LIMIT}
    assert over == {}, f"split these by job: {over}"
