"""The console's page is served from the package and nothing else: no CDN, no build output, every
asset the page names is a file of `app/api/console/`, and the page builds its DOM from text."""

from __future__ import annotations

import re
from pathlib import Path

from app.api.routes.ui import ASSETS

ASSET_REF = re.compile(r"""(?:src|href)="(/ui/assets/[^"]+)\"""")


def test_the_assets_name_nothing_outside_the_service() -> None:
    for path in ASSETS.iterdir():
        text = path.read_text(encoding="utf-8")
        assert not re.search(r"https?://|//cdn|@import", text.replace("http://www.w3.org/2000/svg", "")), path.name


def test_every_asset_the_pages_load_is_in_the_package() -> None:
    for page in ("index.html", "login.html"):
        refs = ASSET_REF.findall((ASSETS / page).read_text(encoding="utf-8"))
        assert refs, page
        for ref in refs:
            assert (ASSETS / Path(ref).name).is_file(), ref


def test_run_data_never_reaches_the_dom_as_html() -> None:
    script = (ASSETS / "console.js").read_text(encoding="utf-8")
    assert "innerHTML" not in script and "insertAdjacentHTML" not in script and "document.write" not in script
