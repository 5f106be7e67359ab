"""Fill a migrated oscar database: countries, one partner, the demo catalogue (upc = our sku, a stock record with
the price and the stock) and the call centre's staff user with an API token.

Run inside the shop's Django settings (harness.oscar reaches it as `python -m harness.oscar_shop.seed CSV`, the
token in $OSCAR_SHOP_TOKEN): Django's ORM is oscar's own management shell; its REST API has no product import.
"""

from __future__ import annotations

import csv
import os
import sys
from decimal import Decimal
from pathlib import Path

import django  # type: ignore[import-untyped]

# Callers' addresses are in these countries; oscar's Country table is empty after migrate.
COUNTRIES = {"DE": "Germany", "NL": "Netherlands", "GB": "United Kingdom", "US": "United States"}
STAFF = "callcenter"


def seed(catalogue: Path, token: str) -> int:
    from django.contrib.auth import get_user_model  # type: ignore[import-untyped]
    from django.contrib.auth.models import Permission  # type: ignore[import-untyped]
    from oscar.apps.address.models import Country  # type: ignore[import-untyped]
    from oscar.apps.catalogue.models import Product, ProductClass  # type: ignore[import-untyped]
    from oscar.apps.partner.models import Partner, StockRecord  # type: ignore[import-untyped]
    from rest_framework.authtoken.models import Token  # type: ignore[import-untyped]

    for code, name in COUNTRIES.items():
        Country.objects.update_or_create(
            iso_3166_1_a2=code, defaults={"name": name, "printable_name": name, "is_shipping_country": True}
        )
    partner, _ = Partner.objects.get_or_create(name="VoiceSwarm demo warehouse")
    kind, _ = ProductClass.objects.get_or_create(
        name="Gadget", defaults={"requires_shipping": True, "track_stock": True}
    )
    with catalogue.open(newline="", encoding="utf-8") as rows:
        count = 0
        for row in csv.DictReader(rows):
            product = Product.objects.create(
                upc=row["sku"], title=row["name"], description=row["description"], product_class=kind
            )
            StockRecord.objects.create(
                product=product,
                partner=partner,
                partner_sku=row["sku"],
                price=Decimal(row["price_eur"]),
                num_in_stock=int(row["stock"]),
            )
            count += 1
    user = get_user_model().objects.create_user(STAFF, f"{STAFF}@shop.example", None, is_staff=True)
    # Least privilege: the staff order list and its lines, read only (oscar-api's admin views check model permissions).
    user.user_permissions.set(
        Permission.objects.filter(content_type__app_label="order", codename__in=("view_order", "view_line"))
    )
    Token.objects.create(user=user, key=token)
    return count


if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "harness.oscar_shop.settings")
    django.setup()
    print(seed(Path(sys.argv[1]), os.environ["OSCAR_SHOP_TOKEN"]), "products")
