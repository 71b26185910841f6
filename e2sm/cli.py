"""``octoric e2sm``: decode / encode E2AP, E2SM-KPM and E2SM-RC PDUs from the shell.

    octoric e2sm decode --hex 0004...                         # an E2AP-PDU -> JSON on stdout
    octoric e2sm decode --pdu E2SM-KPM-IndicationMessage --file msg.bin
    octoric e2sm encode --pdu E2SM-KPM-EventTriggerDefinition --json trig.json   # hex
    octoric e2sm types                                        # what --pdu accepts
    octoric e2sm ue-key --meid gnb_001_001_00019b --f1ap-id 0 # a DU's UE -> its UE key
    octoric e2sm ue-key 874163283689472                       # a UE key -> what it names

``--file`` takes raw bytes or a text file of hex digits (whitespace ignored), such as the
vectors under ../shared/vectors. Bad input prints one line and exits non-zero.
"""

from __future__ import annotations

import argparse
import json
import os
import string
import sys
from pathlib import Path
from typing import Any

from octoric.errors import OctoricError


class E2smCliError(OctoricError):
    """A user error of ``octoric e2sm`` (bad file, bad hex, unknown type)."""


def _accepted_types() -> tuple[str, ...]:
    from octoric.e2sm import codec

    return codec.TOP_LEVEL_TYPES


def _check_type(name: str) -> None:
    from octoric.e2sm import codec

    if name not in codec.TYPES:
        raise E2smCliError(
            f"unknown --pdu {name!r}; accepted: {', '.join(_accepted_types())} "
            "(any type of octoric's ASN.1 modules works too)"
        )


def _read_input(args: argparse.Namespace) -> bytes:
    if args.hex is not None:
        text = "".join(args.hex.split())
        if text.lower().startswith("0x"):
            text = text[2:]
        try:
            return bytes.fromhex(text)
        except ValueError:
            raise E2smCliError("--hex is not a valid hex string") from None
    path = Path(args.file)
    try:
        raw = path.read_bytes() if args.file != "-" else sys.stdin.buffer.read()
    except OSError as e:
        raise E2smCliError(f"cannot read {args.file}: {e.strerror or e}") from None
    stripped = b"".join(raw.split())
    if stripped and all(chr(c) in string.hexdigits for c in stripped):
        try:
            return bytes.fromhex(stripped.decode())
        except ValueError:
            raise E2smCliError(f"{args.file}: odd number of hex digits") from None
    return raw


def _emit(text: str) -> int:
    try:
        print(text)
        sys.stdout.flush()
    except BrokenPipeError:  # e.g. piped into `head`: not an error worth a traceback
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    return 0


def _cmd_decode(args: argparse.Namespace) -> int:
    from octoric.e2sm import jsonconv
    from octoric.e2sm.errors import E2smDecodeError

    _check_type(args.pdu)
    data = _read_input(args)
    variant = _variant(args)
    try:
        js = jsonconv.decode_to_json(args.pdu, data, variant)
    except E2smDecodeError as e:
        if args.pdu == "E2SM-KPM-IndicationHeader" and variant is None and len(data) == 5:
            raise E2smCliError(f"{e} (a KPM v02.03 header? --kpm-version 2.03)") from None
        raise
    return _emit(json.dumps(js, indent=None if args.compact else 2))


def _cmd_encode(args: argparse.Namespace) -> int:
    from octoric.e2sm import jsonconv

    _check_type(args.pdu)
    try:
        text = sys.stdin.read() if args.json == "-" else Path(args.json).read_text()
    except OSError as e:
        raise E2smCliError(f"cannot read {args.json}: {e.strerror or e}") from None
    try:
        js: Any = json.loads(text)
    except json.JSONDecodeError as e:
        raise E2smCliError(f"{args.json}: invalid JSON at line {e.lineno}: {e.msg}") from None
    return _emit(jsonconv.encode_from_json(args.pdu, js, _variant(args)).hex())


def _variant(args: argparse.Namespace) -> str | None:
    """The codec variant of ``--kpm-version`` (v02.03's header types; None for the others,
    whose types octoric's module reads as they are)."""
    from octoric.e2sm.kpm_version import KpmVersion

    try:
        return KpmVersion.parse(args.kpm_version).variant
    except ValueError as e:
        raise E2smCliError(f"--kpm-version: {e}") from None


def _cmd_types(args: argparse.Namespace) -> int:
    for name in _accepted_types():
        print(name)
    return 0


def _cmd_ue_key(args: argparse.Namespace) -> int:
    """The UE key (``contracts.ue_key``) of a DU's UE, or what a key names."""
    from octoric.contracts import ue_key

    if args.key is not None:
        if args.meid is not None or args.f1ap_id is not None:
            raise E2smCliError("give a KEY, or --meid and --f1ap-id, not both")
        if not ue_key.is_ue_key(args.key):
            raise E2smCliError(f"{args.key} is not a UE key (0..{ue_key.UE_KEY_MAX})")
        parts = ue_key.du_parts(args.key)
        if parts is None:
            print(json.dumps({"ue": args.key, "amf_ue_ngap_id": args.key}))
        else:
            print(json.dumps({"ue": args.key, "node_tag": parts[0], "f1ap_id": parts[1]}))
        return 0
    if args.meid is None or args.f1ap_id is None:
        raise E2smCliError("give a KEY, or both --meid and --f1ap-id")
    try:
        key = ue_key.du_key(args.meid, args.f1ap_id)
    except ValueError as e:
        raise E2smCliError(str(e)) from None
    print(json.dumps({"ue": key, "meid": args.meid, "f1ap_id": args.f1ap_id}))
    return 0


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser("e2sm", help="decode/encode E2AP, E2SM-KPM and E2SM-RC PDUs")
    sub = p.add_subparsers(dest="e2sm_command", metavar="SUBCOMMAND")

    d = sub.add_parser("decode", help="aligned-PER bytes -> JSON")
    d.add_argument(
        "--pdu",
        default="E2AP-PDU",
        help="ASN.1 type (default: %(default)s; see `octoric e2sm types`)",
    )
    src = d.add_mutually_exclusive_group(required=True)
    src.add_argument("--hex", help="the PDU as hex")
    src.add_argument("--file", help="file with the PDU (raw bytes or hex text; - = stdin)")
    d.add_argument("--compact", action="store_true", help="one-line JSON")
    d.set_defaults(func=_cmd_decode)

    e = sub.add_parser("encode", help="JSON -> aligned-PER bytes (hex)")
    e.add_argument("--pdu", required=True, help="ASN.1 type, e.g. E2SM-KPM-ActionDefinition")
    e.add_argument("--json", required=True, help="JSON file (- = stdin)")
    e.set_defaults(func=_cmd_encode)
    for x in (d, e):
        x.add_argument(
            "--kpm-version", default="4.00", metavar="V",
            help="E2SM-KPM version of a KPM PDU: 2.03 (4-octet time stamps), 3.00, 4.00, 5.00 "
            "(default %(default)s; 3.00-5.00 read alike)",
        )  # fmt: skip

    t = sub.add_parser("types", help="list the PDU types --pdu accepts")
    t.set_defaults(func=_cmd_types)

    k = sub.add_parser(
        "ue-key",
        help="the UE key of a UE a DU names by F1AP ID only, or what a UE key names",
        description="The integer by which the xApps, their messages, REST APIs and A1 "
        "policies name a UE (docs/e2-interfaces.md, 'The UE key'): a UE's AMF-UE-NGAP-ID, or "
        "for a UE a DU reports by gNB-CU-UE-F1AP-ID only, 2^40 + the node's tag x 2^32 + that "
        "ID. Prints JSON.",
    )
    k.add_argument("key", nargs="?", type=int, help="a UE key to take apart")
    k.add_argument("--meid", help="the DU's MEID, e.g. gnb_001_001_00019b (octoric ric nodes)")
    k.add_argument("--f1ap-id", type=int, help="the UE's gNB-CU-UE-F1AP-ID at that DU")
    k.set_defaults(func=_cmd_ue_key)

    def _help(args: argparse.Namespace) -> int:
        p.print_help()
        return 2

    p.set_defaults(func=_help)
