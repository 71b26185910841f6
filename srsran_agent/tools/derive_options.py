#!/usr/bin/env python3
"""Derive the YAML configuration keys of srsRAN_Project's ``gnb`` application from its sources.

srsRAN_Project declares its configuration schema in C++ with CLI11: every YAML section is a
CLI11 subcommand (``add_subcommand``), every key an option (``add_option``,
``add_option_function``, ``add_flag``, ...), and a list of mappings (``cells``, ``qos``,
``slicing``, ...) is an option whose callback parses each item with a fresh ``CLI::App`` that a
``configure_cli11_*`` function fills. This script reads those C++ files as text (no compiler) and
walks the calls from the gNB's root functions, so it prints every key as a dotted path, with list
items index-free (``cell_cfg.slicing.sst``, ``cu_cp.amf.supported_tracking_areas.tac``). Section
paths (``cu_cp``, ``cu_cp.amf``) are listed too: they are keys of the YAML file as well.

Usage::

    derive_options.py CHECKOUT                        # reads the work tree's files
    derive_options.py GITDIR_OR_CHECKOUT --rev release_25_10 --out options.txt   # reads a tag

Standard library only. Limits (the script is a pattern reader, not a C++ parser):

* It follows the call patterns srsRAN uses: ``CLI::App* x = add_subcommand(app, "name", ..)``,
  ``app.add_subcommand("name")``, ``x->add_option("--k")``, ``add_option(*x, "--k", ..)``,
  ``add_option_function<T>``, ``add_option_cell``, ``app_helpers::add_log_option`` (name is the
  third argument), ``add_auto_enum_option``, ``add_option_group`` (transparent: a group adds no
  YAML level), ``get_subcommand("name")``, and calls of any ``configure_*``-style function defined
  in the files read whose first ``CLI::App&`` parameter gets a known app. String parameters that
  carry an option name (``configure_cli11_with_e2_config_schema(app, cfg, "--enable_du_e2", ..)``)
  are substituted when the caller passes a literal.
* Option names built at run time (``"--" + name``, ``fmt::format``) cannot be read; they are
  reported on stderr as ``unresolved`` and left out.
* Preprocessor conditionals are ignored: both branches count, so DPDK-only sections (``hal``) are
  listed although a gNB built without DPDK rejects them.
* Virtual calls (``unit->on_parsing_configuration_registration(app)``) are not resolved; the
  roots name the implementations the ``gnb`` binary links (``--root FILE:FUNCTION``, defaults
  below: the gNB schema, the O-CU-CP, O-CU-UP and the split_dynamic O-DU units).
* Only long option names (``--x``) are listed; CLI11 matches YAML keys to them.
* What an option accepts (ranges, enumerations) is not derived, only that the key exists.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

DEFAULT_ROOTS = (
    "apps/gnb/gnb_appconfig_cli11_schema.cpp:configure_cli11_with_gnb_appconfig_schema",
    "apps/units/o_cu_cp/o_cu_cp_application_unit_impl.cpp:on_parsing_configuration_registration",
    "apps/units/o_cu_up/o_cu_up_application_unit_impl.cpp:on_parsing_configuration_registration",
    "apps/units/flexible_o_du/split_dynamic/dynamic_o_du_application_unit_impl.cpp:"
    "on_parsing_configuration_registration",
)

# option adders: name -> index of the option-name argument (free-function form, app is arg 0)
OPTION_ADDERS = {
    "add_option": 1,
    "add_option_function": 1,
    "add_option_cell": 1,
    "add_flag": 1,
    "add_flag_function": 1,
    "add_auto_enum_option": 1,
    "add_log_option": 2,
}
LIST_ADDERS = {"add_option_cell", "add_option_function"}  # a lambda argument may parse mappings
BUILTINS = set(OPTION_ADDERS) | {"add_subcommand", "add_option_group", "get_subcommand"}

_KEYWORDS = {"if", "for", "while", "switch", "return", "sizeof", "catch", "static_cast"}


# ---------------------------------------------------------------------------------- reading


def _strip(text: str) -> str:
    """Remove comments and preprocessor lines, keep string literals and offsets."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(text[i : j + 1])
            i = j + 1
        elif c == "'":
            j = i + 1
            while j < n and text[j] != "'":
                j += 2 if text[j] == "\\" else 1
            out.append(text[i : j + 1])
            i = j + 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == "#" and (i == 0 or text[i - 1] == "\n" or text[:i].rstrip(" \t").endswith("\n")):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _match(text: str, i: int, open_: str = "(", close: str = ")") -> int:
    """Index just past the bracket that closes the one at ``text[i]`` (strings skipped)."""
    depth = 0
    n = len(text)
    while i < n:
        c = text[i]
        if c == '"':
            i += 1
            while i < n and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
        elif c == open_:
            depth += 1
        elif c == close:
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return n


def _split_args(args: str) -> list[str]:
    """Split a call's argument text at top-level commas."""
    parts, depth, cur, i = [], 0, [], 0
    while i < len(args):
        c = args[i]
        if c == '"':
            j = i + 1
            while j < len(args) and args[j] != '"':
                j += 2 if args[j] == "\\" else 1
            cur.append(args[i : j + 1])
            i = j + 1
            continue
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        if c == "," and depth == 0:
            parts.append("".join(cur).strip())
            cur = []
        else:
            cur.append(c)
        i += 1
    if "".join(cur).strip():
        parts.append("".join(cur).strip())
    return parts


@dataclass
class Func:
    name: str
    file: str
    static: bool
    params: list[tuple[str, str]]  # (type, name)
    body: str


@dataclass
class Result:
    paths: set[str] = field(default_factory=set)
    unresolved: list[str] = field(default_factory=list)
    files: set[str] = field(default_factory=set)


_NAME_RE = re.compile(r"((?:\w+::)*\w+)\s*\(")


def parse_functions(path: str, text: str) -> list[Func]:
    """Every function definition in ``text`` that takes a ``CLI::App`` (or an option group)."""
    text = _strip(text)
    funcs = []
    for m in _NAME_RE.finditer(text):
        qname = m.group(1)
        name = qname.split("::")[-1]
        if name in _KEYWORDS:
            continue
        # a definition's name follows its return type: "void f(", "CLI::Option*\nf("
        k = m.start() - 1
        while k >= 0 and text[k] in " \t\n":
            k -= 1
        if k < 0 or k == m.start() - 1 or not (text[k].isalnum() or text[k] in "_&*>"):
            continue
        p_open = m.end() - 1
        p_close = _match(text, p_open)
        params_text = text[p_open + 1 : p_close - 1]
        if "CLI::App" not in params_text and "Option_group" not in params_text:
            continue
        b = re.match(r"\s*(?:const\s*)?\{", text[p_close : p_close + 200])
        if not b:
            continue
        b_open = p_close + b.end() - 1
        b_close = _match(text, b_open, "{", "}")
        head_start = max(text.rfind(c, 0, m.start()) for c in ";{}")
        static = bool(re.search(r"\bstatic\b", text[head_start + 1 : m.start()]))
        params = []
        for arg in _split_args(params_text):
            arg = arg.split("=")[0].strip()
            pm = re.match(r"(.*?)(\w+)$", arg)
            if pm:
                params.append((pm.group(1).strip(), pm.group(2)))
        funcs.append(Func(name, path, static, params, text[b_open + 1 : b_close - 1]))
    return funcs


# ---------------------------------------------------------------------------------- walking


class Walker:
    def __init__(self, funcs: list[Func]) -> None:
        self.by_file: dict[tuple[str, str], list[Func]] = {}
        self.by_name: dict[str, list[Func]] = {}
        for f in funcs:
            self.by_file.setdefault((f.file, f.name), []).append(f)
            self.by_name.setdefault(f.name, []).append(f)
        self.result = Result()
        self._stack: list[str] = []

    def resolve(self, name: str, file: str) -> Func | None:
        if (file, name) in self.by_file:
            return self.by_file[(file, name)][0]
        cands = self.by_name.get(name, [])
        public = [f for f in cands if not f.static]
        if public:
            return public[0]
        return cands[0] if len(cands) == 1 else None

    # -- expressions

    def app_of(
        self, expr: str, env: dict[str, tuple[str, ...]], file: str
    ) -> tuple[str, ...] | None:
        e = expr.strip()
        while e.startswith(("*", "&")):
            e = e[1:].strip()
        m = re.match(
            r"(?:(\w+)\s*(?:\.|->)\s*)?(add_subcommand|get_subcommand|get_subcommand_ptr)\s*\(", e
        )
        if not m:
            m2 = re.match(r"(\w+)\s*(?:\.|->)\s*add_option_group\s*\(", e)
            if m2:
                return env.get(m2.group(1))
            return env.get(re.match(r"\w*", e).group(0)) if re.match(r"\w+$", e) else None
        args = _split_args(e[m.end() : _match(e, m.end() - 1) - 1])
        if m.group(1):
            base, name_arg = env.get(m.group(1)), args[0] if args else ""
        else:
            base, name_arg = (
                (self.app_of(args[0], env, file) if args else None),
                (args[1] if len(args) > 1 else ""),
            )
        name = _literal(name_arg)
        if base is None or name is None:
            return None
        path = (*base, name)
        self.result.paths.add(".".join(path))
        return path

    # -- statements

    def walk(self, func: Func, env: dict[str, tuple[str, ...]], strs: dict[str, str]) -> None:
        key = f"{func.file}:{func.name}:{env}"
        if key in self._stack or len(self._stack) > 40:
            return
        self._stack.append(key)
        self.result.files.add(func.file)
        self.block(func.body, dict(env), dict(strs), func.file)
        self._stack.pop()

    def block(self, body: str, env: dict, strs: dict, file: str) -> None:
        # lambdas stored in variables: kept aside, walked where an option uses them
        lambdas: dict[str, str] = {}
        for m in re.finditer(r"\bauto\s+(\w+)\s*=\s*\[", body):
            lb = body.find("{", _match(body, m.end() - 1, "[", "]"))
            if lb < 0:
                continue
            end = _match(body, lb, "{", "}")
            lambdas[m.group(1)] = body[lb + 1 : end - 1]
            body = body[: m.start()] + " " * (end - m.start()) + body[end:]

        call_re = re.compile(r"(?:(\w+)\s*(?:\.|->)\s*)?((?:\w+::)*\w+)\s*(?:<[^();]*>)?\s*\(")
        i = 0
        while True:
            m = call_re.search(body, i)
            if not m:
                break
            recv, qname = m.group(1), m.group(2)
            name = qname.split("::")[-1]
            p_open = m.end() - 1
            p_close = _match(body, p_open)
            args = _split_args(body[p_open + 1 : p_close - 1])
            i = m.end()  # nested calls are visited too (inner expressions)

            # CLI::App* x = <expr>;   auto* x = <expr>;   auto x = <expr>;
            before = body[max(0, m.start() - 120) : m.start()]
            assign = re.search(
                r"(?:CLI::App\s*\*|CLI::Option_group\s*\*|auto\s*\*?)\s*(\w+)\s*=\s*$", before
            )
            if name in (
                "add_subcommand",
                "get_subcommand",
                "get_subcommand_ptr",
                "add_option_group",
            ):
                start = m.start()
                path = self.app_of(body[start:p_close], env, file)
                if assign and path is not None:
                    env[assign.group(1)] = path
                i = p_close
                continue

            if name in OPTION_ADDERS and (recv is None or recv in env):
                if recv is not None:
                    app_path, name_args = env.get(recv), args
                    idx = OPTION_ADDERS[name] - 1
                else:
                    app_path, name_args = self.app_of(args[0], env, file) if args else None, args
                    idx = OPTION_ADDERS[name]
                if app_path is None:
                    i = p_close
                    continue
                raw = name_args[idx] if idx < len(name_args) else ""
                opt = _literal(raw)
                if opt is None and raw in strs:
                    opt = strs[raw]
                if opt is None:
                    where = ".".join(app_path)
                    self.result.unresolved.append(f"{file}: option name {raw!r} under {where}")
                    i = p_close
                    continue
                longs = [o.strip()[2:] for o in opt.split(",") if o.strip().startswith("--")]
                for long_name in longs:
                    opt_path = (*app_path, long_name)
                    self.result.paths.add(".".join(opt_path))
                    if name in LIST_ADDERS and idx + 1 < len(name_args):
                        fn = name_args[idx + 1].strip()
                        lam = lambdas.get(fn)
                        if lam is None and fn.startswith("["):
                            lb = fn.find("{")
                            lam = fn[lb + 1 : _match(fn, lb, "{", "}") - 1] if lb >= 0 else None
                        if lam:
                            sub_env = dict(env)
                            for d in re.finditer(r"\bCLI::App\s+(\w+)\s*[({]", lam):
                                sub_env[d.group(1)] = opt_path
                            self.block(lam, sub_env, dict(strs), file)
                i = p_close
                continue

            if name in BUILTINS or name in _KEYWORDS or recv is not None:
                continue
            callee = self.resolve(name, file)
            if callee is None:
                continue
            new_env: dict[str, tuple[str, ...]] = {}
            new_strs: dict[str, str] = {}
            bound = False
            for (ptype, pname), arg in zip(callee.params, args, strict=False):
                if "CLI::App" in ptype or "Option_group" in ptype:
                    path = self.app_of(arg, env, file)
                    if path is not None:
                        new_env[pname] = path
                        bound = True
                elif "string" in ptype:
                    lit = _literal(arg)
                    if lit is None and arg in strs:
                        lit = strs[arg]
                    if lit is not None:
                        new_strs[pname] = lit
            if bound:
                self.walk(callee, new_env, new_strs)
                i = p_close


def _literal(arg: str) -> str | None:
    m = re.fullmatch(r'\s*"((?:[^"\\]|\\.)*)"\s*', arg)
    return m.group(1) if m else None


# ---------------------------------------------------------------------------------- sources


def _list_files(src: Path, rev: str | None) -> tuple[list[str], callable]:
    if rev is None and (src / "apps").is_dir():
        files = [str(p.relative_to(src)) for p in (src / "apps").rglob("*") if p.is_file()]
        return files, lambda p: (src / p).read_text(encoding="utf-8", errors="replace")
    rev = rev or "HEAD"
    git_dir = src / ".git" if (src / ".git").exists() else src  # a checkout, or a bare git dir
    git = ["git", f"--git-dir={git_dir}"]

    def run(*args: str) -> str:
        return subprocess.run([*git, *args], check=True, capture_output=True, text=True).stdout

    return run("ls-tree", "-r", "--name-only", rev, "apps").split(), lambda p: run(
        "show", f"{rev}:{p}"
    )


def derive(src: Path, rev: str | None = None, roots: tuple[str, ...] = DEFAULT_ROOTS) -> Result:
    files, read = _list_files(src, rev)
    root_files = {r.split(":")[0] for r in roots}
    wanted = [
        f for f in files if (("cli11" in f and f.endswith((".cpp", ".h"))) or f in root_files)
    ]
    funcs: list[Func] = []
    for f in sorted(wanted):
        funcs.extend(parse_functions(f, read(f)))
    walker = Walker(funcs)
    for root in roots:
        file, fname = root.split(":")
        func = next((f for f in walker.by_file.get((file, fname), [])), None)
        if func is None:
            walker.result.unresolved.append(f"root not found: {root}")
            continue
        app_param = next(n for t, n in func.params if "CLI::App" in t)
        walker.walk(func, {app_param: ()}, {})
    return walker.result


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("src", type=Path, help="srsRAN_Project checkout or bare git dir")
    ap.add_argument("--rev", help="tag or commit to read from a git dir (default: HEAD)")
    ap.add_argument("--root", action="append", help="FILE:FUNCTION to start from (repeatable)")
    ap.add_argument("--out", type=Path, help="write here instead of stdout")
    ns = ap.parse_args(argv)
    roots = tuple(ns.root) if ns.root else DEFAULT_ROOTS
    res = derive(ns.src, ns.rev, roots)
    rev = ns.rev or "work tree"
    header = [f"# srsRAN_Project gnb YAML config keys (dotted, list items index-free), rev {rev}"]
    if ns.rev:
        try:
            git_dir = ns.src / ".git" if (ns.src / ".git").exists() else ns.src
            cmd = ["git", f"--git-dir={git_dir}", "rev-parse", f"{ns.rev}^{{commit}}"]
            commit = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.strip()
            header[0] += f" commit {commit}"
        except (subprocess.CalledProcessError, FileNotFoundError):
            pass
    files = " ".join(sorted(res.files))
    header.append(f"# derived by srsran_agent/tools/derive_options.py from: {files}")
    text = "\n".join(header + sorted(p for p in res.paths if p)) + "\n"
    if ns.out:
        ns.out.write_text(text)
    else:
        sys.stdout.write(text)
    for u in res.unresolved:
        print(f"unresolved: {u}", file=sys.stderr)
    print(f"{len(res.paths)} keys from {len(res.files)} files", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
