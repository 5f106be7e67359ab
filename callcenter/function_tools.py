"""The call centre's own tools: typed Python functions named by import path in the swarm file, as Nestia's class
controllers are (`function = "mypackage.crm:lookup_customer"`).

The schema the model sees comes from the type hints (swarm.tools.tool_from_function), so every parameter must
have one; a function that writes must have a confirmation step, which swarm_file.check_tools holds it to.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable
from typing import Any, get_type_hints

from callcenter.swarm_file import SwarmFile, SwarmFileError, ToolSpec
from swarm import Tool, tool_from_function


def function_tools(swarm: SwarmFile) -> list[Tool]:
    """The file's function tools, imported and typed; raises SwarmFileError naming the line of what is wrong."""
    return [_tool(swarm, spec) for spec in swarm.tools.values() if spec.function]


def _tool(swarm: SwarmFile, spec: ToolSpec) -> Tool:
    where = swarm.where("tools", spec.name, "function")
    fn = _imported(spec.function, where)
    _require_types(fn, spec, where)
    if not (spec.description or inspect.getdoc(fn)):
        raise SwarmFileError(
            f'{where}: {spec.function} has no docstring: write one, or description = "..." in [tools.{spec.name}] '
            "(the model picks tools by it)"
        )
    try:
        return tool_from_function(
            fn,
            name=spec.name,
            description=spec.description or None,
            examples=spec.examples,
            says_result=spec.says_result,
            # A reading tool's turn can be taken back when the caller barges in; a writing one's cannot.
            changes_nothing=not spec.writes,
        )
    except Exception as error:  # pydantic cannot make a schema of a hint (a class of the CRM's, say)
        raise SwarmFileError(f"{where}: no JSON schema for the parameters of {spec.function}: {error}") from error


def _imported(path: str, where: str) -> Callable[..., Any]:
    module_name, _, attribute = path.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise SwarmFileError(
            f"{where}: cannot import {module_name} ({error}): install the package, or put its directory on PYTHONPATH"
        ) from error
    fn = getattr(module, attribute, None)
    if fn is None or not callable(fn):
        raise SwarmFileError(f"{where}: {module_name} has no function {attribute!r}")
    return fn


def _require_types(fn: Callable[..., Any], spec: ToolSpec, where: str) -> None:
    try:
        hints = get_type_hints(fn)
    except Exception as error:  # a hint naming something the module does not import
        raise SwarmFileError(f"{where}: the type hints of {spec.function} cannot be read: {error}") from error
    untyped = [
        name
        for name, parameter in inspect.signature(fn).parameters.items()
        if name not in hints and parameter.kind not in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD)
    ]
    if untyped:
        raise SwarmFileError(
            f"{where}: {spec.function} leaves {', '.join(untyped)} without a type: the model is told the types "
            "(str, int, bool, float, Literal[...])"
        )
    variadic = [
        p.name for p in inspect.signature(fn).parameters.values() if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    ]
    if variadic:
        raise SwarmFileError(f"{where}: {spec.function} takes *{variadic[0]}: name every parameter")
