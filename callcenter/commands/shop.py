"""`voiceswarm shop import FILE`: the call centre's own catalogue (.csv or .json) into the shop database."""

from __future__ import annotations

import argparse
import sys

from callcenter.config import Config
from callcenter.shop import CatalogueError, Shop
from callcenter.store import DatabaseError, parse_url


def register(commands: argparse._SubParsersAction) -> None:
    shop = commands.add_parser("shop", help="manage the built-in shop's catalogue")
    actions = shop.add_subparsers(dest="shop_command", required=True)
    load = actions.add_parser(
        "import",
        help="add and update products from a .csv or .json file, all or none",
        description="Columns (CSV) or keys (JSON): sku, name, price_eur, stock, and optionally description and "
        "category. Known skus are updated, new ones added; nothing is written if any row is wrong.",
    )
    load.add_argument("file", help="products.csv or products.json")
    load.add_argument(
        "--replace", action="store_true", help="also remove the products the file does not list (refused if sold)"
    )
    load.set_defaults(run=run_import)


def run_import(args: argparse.Namespace, config: Config) -> int:
    try:
        # No demo catalogue first: into a new database goes only the file.
        with Shop(config.database, phone_region=config.callers.phone_region, seed_catalogue=False) as shop:
            result = shop.import_catalogue(args.file, replace=args.replace)
            total = len(shop.products())
    except (CatalogueError, DatabaseError) as error:
        print(f"voiceswarm shop import: {error}", file=sys.stderr)
        return 1
    print(f"{args.file}: {result}; the shop at {_shown(config.database)} now has {total} products")
    return 0


def _shown(database: str) -> str:
    return str(parse_url(database))  # never a password
