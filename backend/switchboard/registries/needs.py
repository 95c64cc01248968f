"""What installing an entry asks for, and filling it in.

A remote's URL template names variables of the remote; a header or environment variable either
has a fixed `value` (a template over its own `variables`) or is itself the value to give; an
argument is fixed, templated, or given under its `valueHint` (or its flag without dashes).  One
name asked in two places is one field (secret if either place says so).  `Filler` turns the
given values into the finished strings, refusing what is missing or not allowed."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from urllib.parse import quote

from ..errors import BadRequest
from .entries import TEMPLATE, Argument, Input, KeyValueInput, Need, Package, Remote, template_names

__all__ = ["Filler", "argument_need_name", "package_needs", "remote_needs"]

MAX_VALUE_CHARS = 2000
PYPI_COMMAND = "command"  # the field for a PyPI package's program, when it is not the package's name
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def _need(name: str, source: Input, where: str, *, secret: bool = False, required: bool | None = None) -> Need:
    return Need(
        name=name,
        description=source.description,
        required=source.isRequired if required is None else required,
        secret=source.isSecret or secret,
        default=source.default,
        choices=tuple(source.choices or ()),
        placeholder=source.placeholder,
        where=where,
    )


def _merge(needs: list[Need]) -> list[Need]:
    merged: dict[str, Need] = {}
    for need in needs:
        seen = merged.get(need.name)
        if seen is None:
            merged[need.name] = need
        else:
            merged[need.name] = replace(
                seen,
                required=seen.required or need.required,
                secret=seen.secret or need.secret,
                where=f"{seen.where}; {need.where}",
                description=seen.description or need.description,
            )
    return list(merged.values())


def source_of(name: str, variables: Mapping[str, Input], parent: Input | None) -> Input:
    """The input a template's `{name}` stands for: its declared variable, else (publishers often
    leave it out) one like the value that holds it: required and secret as that value is."""
    declared = variables.get(name)
    if declared is not None:
        return declared
    if parent is None:  # a URL: a hole in it is never optional
        return Input(isRequired=True)
    return Input(description=parent.description, isRequired=parent.isRequired, isSecret=parent.isSecret)


def _templated(value: str, variables: Mapping[str, Input], where: str, parent: Input) -> list[Need]:
    """The fields a templated value asks for: its variables without a fixed value of their own."""
    needs = []
    for name in template_names(value):
        source = source_of(name, variables, parent)
        if source.value is None:
            needs.append(_need(name, source, where, secret=parent.isSecret))
    return needs


def _key_value_needs(item: KeyValueInput, where: str) -> list[Need]:
    if item.value is None:
        return [_need(item.name, item, where)]
    return _templated(item.value, item.variables, where, item)


def argument_need_name(arg: Argument) -> str:
    return arg.valueHint or (arg.name or "").lstrip("-") or "argument"


def _argument_needs(arg: Argument) -> list[Need]:
    where = f"argument {arg.name or argument_need_name(arg)}"
    if arg.value is None:
        return [_need(argument_need_name(arg), arg, where)]
    return _templated(arg.value, arg.variables, where, arg)


def remote_needs(remote: Remote) -> list[Need]:
    """A remote's fields: its URL's variables (always needed: a URL with a hole is no URL) and its headers."""
    sources = {name: source_of(name, remote.variables, None) for name in template_names(remote.url)}
    needs = [
        _need(name, source, "url", required=source.default is None)
        for name, source in sources.items()
        if source.value is None
    ]
    for header in remote.headers:
        needs += _key_value_needs(header, f"header {header.name}")
    return _merge(needs)


def package_needs(package: Package) -> list[Need]:
    needs: list[Need] = []
    if package.registryType == "pypi":
        needs.append(
            Need(
                name=PYPI_COMMAND,
                description="The program the package installs, when it is not named like the package",
                default=re.split(r"[\[=<>~!]", package.identifier, maxsplit=1)[0],
                where="uvx command",
            )
        )
    for env in package.environmentVariables:
        needs += _key_value_needs(env, f"env {env.name}")
    for arg in package.packageArguments:
        needs += _argument_needs(arg)
    return _merge(needs)


@dataclass
class Filler:
    """Fills templates and inputs from the given `variables`; remembers which outputs hold a secret."""

    variables: Mapping[str, object]
    entry: str  # the entry's name, for messages
    missing: list[str] = field(default_factory=list)

    def given(self, name: str, source: Input, *, required: bool = False) -> str | None:
        raw = self.variables.get(name)
        if raw is None or raw == "":
            if source.default is not None and not source.isSecret:
                return source.default
            if source.isRequired or required:
                self.missing.append(name)
            return None
        if isinstance(raw, bool | int | float):
            raw = str(raw).lower() if isinstance(raw, bool) else str(raw)
        if not isinstance(raw, str):
            raise BadRequest(f"variable '{name}' must be a string", action="Give every variable as text.")
        if len(raw) > MAX_VALUE_CHARS or _CONTROL.search(raw):
            raise BadRequest(
                f"variable '{name}' is too long or holds control characters (line breaks included)",
                action=f"Give a single line of at most {MAX_VALUE_CHARS} characters.",
            )
        if source.choices and raw not in source.choices:
            raise BadRequest(f"variable '{name}' must be one of: {', '.join(source.choices)}")
        return raw

    def template(
        self, text: str, variables: Mapping[str, Input], *, parent: Input | None = None
    ) -> tuple[str | None, bool]:
        """`text` with its `{names}` filled in one pass (a value is never read as a template), and
        whether a secret went in; None when a name was left without a value.  In a URL (no
        `parent`) every value but a leading one (a base URL, as the schema allows) is
        percent-encoded, so that a value cannot move the URL to another host or path."""
        url = parent is None
        secret = False
        holes = False

        def fill(match: re.Match[str]) -> str:
            nonlocal secret, holes
            name = match.group(1)
            source = source_of(name, variables, parent)
            value = source.value if source.value is not None else self.given(name, source, required=url)
            if value is None:
                holes = True
                return match.group(0)
            secret = secret or source.isSecret
            return value if (not url or match.start() == 0) else quote(value, safe="")

        out = TEMPLATE.sub(fill, text)
        return (None if holes else out), secret

    def key_value(self, item: KeyValueInput) -> tuple[str | None, bool]:
        """A header's or environment variable's value (None: left out, e.g. an optional variable
        not given), and whether it is secret."""
        if item.value is None:
            return self.given(item.name, item), item.isSecret
        value, secret = self.template(item.value, item.variables, parent=item)
        return value, value is not None and (secret or item.isSecret)

    def argument(self, arg: Argument) -> list[str]:
        if arg.value is None:
            value = self.given(argument_need_name(arg), arg)
        else:
            value, _ = self.template(arg.value, arg.variables, parent=arg)
        if value is None:
            return []
        return [value] if arg.type == "positional" else [arg.name or "", value]

    def check_complete(self) -> None:
        if self.missing:
            names = ", ".join(dict.fromkeys(self.missing))
            raise BadRequest(
                f"'{self.entry}' needs a value for: {names}; nothing was installed",
                action="Fill in every required field and install again.",
            )
