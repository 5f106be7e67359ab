"""The call centre's own order system over HTTP as the agents' shop (issue 24): [shop.http] maps the shop's jobs to
the operations of its OpenAPI document and the fields of their answers."""

from callcenter.http_shop.backend import RETURNS_BY_A_PERSON, HttpShop
from callcenter.http_shop.mapping import HttpShopConfig, MappingError, load_mapping

__all__ = ["RETURNS_BY_A_PERSON", "HttpShop", "HttpShopConfig", "MappingError", "load_mapping"]
