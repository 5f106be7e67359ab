"""`voiceswarm shop import`: a call centre's own catalogue into the shop, on SQLite and PostgreSQL; all or nothing."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import pytest

from callcenter.cli import main
from callcenter.config import ConfigError, load_config
from callcenter.shop import CatalogueError, Shop
from harness.postgres import count_rows

HEADER = "sku,name,description,price_eur,stock,category\n"
DEMO_CSV = Path(str(resources.files("callcenter").joinpath("data/products.csv")))
PHONE = "+49 170 1234567"


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def thousand_products(path: Path) -> Path:
    kinds = ["kettle", "lamp", "blender", "toaster", "fan", "heater", "clock", "scale"]
    colours = ["red", "green", "blue", "black", "white"]
    rows = [
        f"K-{i:04d},{colours[i % 5].title()} {kinds[i % 8]} model {i},A {colours[i % 5]} {kinds[i % 8]},"
        f"{10 + i % 90}.{i % 100:02d},{i % 7},home"
        for i in range(1000)
    ]
    # One product no generated row resembles, to be found among the thousand.
    rows.append("ZEP-1,Zeppelin model kit,A 1:500 scale airship kit to glue and paint,34.50,5,toys")
    return write(path, HEADER + "\n".join(rows) + "\n")


def test_import_into_a_new_database_brings_no_demo_and_is_searchable(tmp_path: Path, database_url: str) -> None:
    catalogue = thousand_products(tmp_path / "products.csv")
    with Shop(database_url, seed_catalogue=False) as shop:
        result = shop.import_catalogue(catalogue)
        assert (result.added, result.updated, result.removed) == (1001, 0, 0)
        assert shop.get_product("HP-100") is None  # the demo's headphones
        found = shop.search("a zeppelin kit")
        assert [p.sku for p in found][:1] == ["ZEP-1"]
        assert found[0].price_cents == 3450
        lamps = shop.search("blue lamp", limit=5)
        assert lamps and all("lamp" in p.name.lower() and "blue" in p.name.lower() for p in lamps)
    # Opened again as `serve` opens it: an imported catalogue is no new database, so no demo is added.
    with Shop(database_url) as again:
        assert len(again.products()) == 1001
        assert again.get_product("HP-100") is None


def test_a_bad_row_names_line_and_field_and_nothing_is_imported(tmp_path: Path, database_url: str) -> None:
    bad = write(
        tmp_path / "bad.csv",
        HEADER + "NEW-1,Garden gnome,,9.90,3,garden\n"  # line 2: fine, but must not be imported
        "HP-100,Cheaper headphones,,1.00,1,audio\n"  # line 3: fine, an update that must not happen either
        "NEW-2,Pond,,12.5.0,2,garden\n"  # line 4: the price
        "NEW-3,Hose,,4.00,many,garden\n",  # line 5: the stock
    )
    with Shop(database_url) as shop:  # the demo catalogue
        before = shop.products()
        with pytest.raises(CatalogueError) as caught:
            shop.import_catalogue(bad)
        assert shop.products() == before
    where = [(p.line, p.field) for p in caught.value.problems]
    assert where == [(4, "price_eur"), (5, "stock")]
    message = str(caught.value)
    assert "bad.csv line 4, price_eur: '12.5.0' is not a price" in message
    assert "bad.csv line 5, stock: 'many' is not a whole number" in message
    assert "nothing imported" in message


def test_json_rows_are_named_by_the_line_of_their_field(tmp_path: Path, database_url: str) -> None:
    products = [
        {"sku": "J-1", "name": "Jar", "price_eur": 2.5, "stock": 3},
        {"sku": "J-2", "name": "", "price_eur": 1, "stock": 1},
        {"sku": "J-3", "name": "Jug", "price_eur": 1.999, "stock": True},
    ]
    text = json.dumps({"products": products}, indent=2)  # one key a line
    bad = write(tmp_path / "bad.json", text)
    lines = text.splitlines()

    def line_of(fragment: str) -> int:
        return next(i for i, line in enumerate(lines, 1) if fragment in line)

    with Shop(database_url, seed_catalogue=False) as shop:
        with pytest.raises(CatalogueError) as caught:
            shop.import_catalogue(bad)
        assert shop.products() == []
    assert [(p.line, p.field) for p in caught.value.problems] == [
        (line_of('"name": ""'), "name"),
        (line_of("1.999"), "price_eur"),
        (line_of('"stock": true'), "stock"),
    ]
    good = write(tmp_path / "good.json", json.dumps([products[0]]))
    with Shop(database_url, seed_catalogue=False) as shop:
        shop.import_catalogue(good)
        jar = shop.get_product("j-1")
        assert jar is not None and jar.price_cents == 250 and jar.stock == 3


def test_reimport_updates_known_products_and_orders_keep_their_price(tmp_path: Path, database_url: str) -> None:
    first = write(tmp_path / "a.csv", HEADER + "A-1,Kettle,Steel,20.00,5,home\nA-2,Lamp,Brass,30.00,5,home\n")
    second = write(tmp_path / "b.csv", HEADER + "A-1,Kettle,Steel,25.00,5,home\nA-2,Lamp,Brass,30.00,5,home\n")
    with Shop(database_url, seed_catalogue=False) as shop:
        shop.import_catalogue(first)
        order = shop.place_order(PHONE, [("A-1", 1)], "order-1")
        result = shop.import_catalogue(second)
        assert (result.added, result.updated, result.unchanged) == (0, 1, 1)
        kettle = shop.get_product("A-1")
        assert kettle is not None and kettle.price_cents == 2500
        (again,) = shop.find_orders(order_number=order.order_number)
        assert again.lines[0].unit_price_cents == 2000


def test_replace_removes_unlisted_products_but_never_sold_ones(tmp_path: Path, database_url: str) -> None:
    both = write(tmp_path / "both.csv", HEADER + "A-1,Kettle,,20.00,5,home\nA-2,Lamp,,30.00,5,home\n")
    only_lamp = write(tmp_path / "lamp.csv", HEADER + "A-2,Lamp,,35.00,5,home\n")
    with Shop(database_url, seed_catalogue=False) as shop:
        shop.import_catalogue(both)
        assert shop.import_catalogue(only_lamp, replace=True).removed == 1
        assert [p.sku for p in shop.products()] == ["A-2"]
        shop.import_catalogue(both)
        shop.place_order(PHONE, [("A-1", 1)], "order-1")
        with pytest.raises(CatalogueError, match=r"orders or returns name: A-1"):
            shop.import_catalogue(only_lamp, replace=True)
        # Refused after the lamp's new price was written: the transaction took it back.
        lamp = shop.get_product("A-2")
        assert lamp is not None and lamp.price_cents == 3000
        assert [p.sku for p in shop.products()] == ["A-1", "A-2"]
    assert count_rows(database_url, "products") == 2


def test_the_command_imports_the_demo_file_and_reports_bad_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    database = tmp_path / "shop.db"
    monkeypatch.setenv("VOICESWARM_DB", str(database))
    # A file of the call centre's, not the packaged one the demo seeds from.
    own = write(tmp_path / "products.csv", DEMO_CSV.read_text().replace("HP-100,", "OWN-100,", 1))
    assert main(["shop", "import", str(own)]) == 0
    rows = len(own.read_text().splitlines()) - 1
    assert f"{rows} added" in capsys.readouterr().out
    with Shop(database) as shop:
        assert shop.get_product("OWN-100") is not None and shop.get_product("HP-100") is None

    bad = write(tmp_path / "bad.csv", HEADER + "B-1,,x,1.00,1,z\n")
    assert main(["shop", "import", str(bad)]) == 1
    assert "bad.csv line 2, name: empty" in capsys.readouterr().err
    assert main(["shop", "import", str(tmp_path / "products.xlsx")]) == 1
    assert ".csv or a .json file" in capsys.readouterr().err


def test_the_config_names_a_catalogue_file(tmp_path: Path) -> None:
    config_file = write(tmp_path / "voiceswarm.toml", '[shop]\ncatalogue = "own.json"\n')
    assert load_config(config_file).catalogue == "own.json"
    write(config_file, '[shop]\ncatalogue = "own.xlsx"\n')
    with pytest.raises(ConfigError, match=r"shop\.catalogue"):
        load_config(config_file)
