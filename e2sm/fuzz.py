"""Mutation fuzzer for every e2sm decoder (no atheris needed; one process, one core).

    .venv/bin/python -m octoric.e2sm.fuzz --inputs-per-decoder 1000000 --seed 1

Each decoder gets mutated valid PDUs (bit flips, byte overwrites, truncation, extension,
duplicated slices, hostile length octets) and random byte strings. A decoder passes when it
returns a value or raises ``E2smDecodeError`` (anything else is a finding), and every call
stays under ``--bound-s`` (the codec's per-message time limit plus slack). Prints one line per
decoder and a summary; exit code 1 on any finding. tests/e2sm/test_fuzz.py runs a short smoke
version of the same loop in the default suite and a long one under the ``slow`` marker.
"""

from __future__ import annotations

import argparse
import functools
import random
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from octoric.contracts import kpm as K
from octoric.contracts import ports
from octoric.e2sm import codec, e2ap, jsonconv, kpm, rc
from octoric.e2sm.common import Guami, UeId, ntp_timestamp
from octoric.e2sm.envelope import decode_ric_indication
from octoric.e2sm.errors import E2smDecodeError
from octoric.e2sm.fastpath import FastFormat3Decoder
from octoric.e2sm.indication import parse_indication, parse_ric_indication
from octoric.e2sm.rc_fast import RcIndicationDecoder

Decoder = Callable[[bytes], Any]


@dataclass
class DecoderReport:
    name: str
    inputs: int = 0
    decoded: int = 0
    rejected: int = 0
    findings: list[str] = field(default_factory=list)
    max_seconds: float = 0.0
    over_bound: int = 0


def seed_corpus() -> dict[str, list[bytes]]:
    """Valid PDUs per ASN.1 type, built with the public API (no external files needed)."""
    g = Guami(b"\x00\xf1\x10", 2, 1, 1)
    ues = [UeId.gnb(100 + i, g, i) for i in range(3)]
    rid = e2ap.RicRequestId(1021, 7)
    ind = kpm.KpmIndicationMessage(
        kpm.IndicationFormat3(
            tuple(
                kpm.UeReport(
                    u,
                    kpm.IndicationFormat1(
                        (kpm.MeasRecord((1, 2.5, None, kpm.NOT_SATISFIED, 70000)),),
                        tuple(kpm.MeasInfo(m) for m in kpm.OCC_MEASUREMENTS[:5]),
                        1,
                    ),
                )
                for u in ues
            )
        )
    )
    kpm_seeds = {
        "E2SM-KPM-EventTriggerDefinition": [kpm.encode_kpm(kpm.KpmEventTrigger(10))],
        "E2SM-KPM-ActionDefinition": [
            kpm.encode_kpm(kpm.action_definition_style1([K.PRB_AVAIL_DL])),
            kpm.encode_kpm(kpm.action_definition_style4()),
            kpm.encode_kpm(kpm.action_definition_style5(ues)),
        ],
        "E2SM-KPM-IndicationHeader": [
            kpm.encode_kpm(kpm.KpmIndicationHeader(ntp_timestamp(1.7e9), "1", "gnb", "DU", "x"))
        ],
        "E2SM-KPM-IndicationMessage": [kpm.encode_kpm(ind)],
        "E2SM-KPM-RANfunction-Description": [kpm.encode_kpm(kpm.octoric_ran_function_definition())],
    }
    header, message = rc.octopus_control(ues[0], rc.OctopusAdaptation(4))
    nested = rc.RcControlMessage(
        (
            rc.RanParam(
                1,
                rc.ListValue(
                    (
                        rc.Structure(
                            (rc.RanParam(2, rc.Structure((rc.RanParam(3, rc.Element(b"x")),))),)
                        ),
                    )
                ),
            ),
        )
    )
    rc_seeds = {
        "E2SM-RC-ControlHeader": [header],
        "E2SM-RC-ControlMessage": [message, rc.encode_rc(nested)],
        "E2SM-RC-ControlOutcome": [rc.encode_rc(rc.RcControlOutcome(((1, True), (2, 1.5))))],
        "E2SM-RC-EventTrigger": [rc.encode_rc(rc.event_trigger_ue_info())],
        "E2SM-RC-ActionDefinition": [rc.encode_rc(rc.RcActionDefinition(4, (1, 2, 3)))],
        "E2SM-RC-IndicationHeader": [rc.encode_rc(rc.RcIndicationHeader(3, 1, ues[0]))],
        "E2SM-RC-IndicationMessage": [
            rc.encode_rc(rc.RcIndicationMessage(ue_params=((ues[0], nested.params),)))
        ],
        "E2SM-RC-RANFunctionDefinition": [rc.encode_rc(rc.octoric_ran_function_definition())],
    }
    e2ap_msgs: list[e2ap.E2apMessage] = [
        e2ap.E2SetupRequest(
            1,
            e2ap.GlobalE2NodeId(b"\x00\xf1\x10", 411, 22, "gNB", None, 0),
            [
                e2ap.RanFunction(2, kpm_seeds["E2SM-KPM-RANfunction-Description"][0], 0, kpm.OID),
                e2ap.RanFunction(3, rc_seeds["E2SM-RC-RANFunctionDefinition"][0], 0, rc.OID),
            ],
            [
                e2ap.E2NodeComponentConfig(
                    "ng", e2ap.E2NodeComponentId("ng", name="amf"), b"\x00\x15", b"\x20\x15"
                )
            ],
        ),
        e2ap.RicSubscriptionRequest(
            rid,
            2,
            e2ap.RicSubscriptionDetails(
                kpm_seeds["E2SM-KPM-EventTriggerDefinition"][0],
                (e2ap.RicActionToBeSetup(1, "report", kpm_seeds["E2SM-KPM-ActionDefinition"][1]),),
            ),
        ),
        e2ap.RicSubscriptionResponse(rid, 2, [1], []),
        e2ap.RicIndication(
            rid,
            2,
            1,
            kpm_seeds["E2SM-KPM-IndicationHeader"][0],
            kpm_seeds["E2SM-KPM-IndicationMessage"][0],
            sn=5,
        ),
        e2ap.RicControlRequest(rid, 3, header, message, ack_request="ack"),
        e2ap.RicControlFailure(rid, 3, e2ap.Cause("misc", "unspecified")),
        e2ap.ErrorIndication(1, rid, 2, e2ap.Cause("protocol", "semantic-error")),
        e2ap.RicSubscriptionDeleteRequired(
            [e2ap.RicSubscriptionWithCause(rid, 2, e2ap.Cause("ricRequest", "unspecified"))]
        ),
        e2ap.E2ConnectionUpdate(
            3, [e2ap.E2ConnectionUpdateItem(e2ap.TnlInformation(0x7F000001, 32, ports.E2), "both")]
        ),
    ]
    return {"E2AP-PDU": [e2ap.encode_e2ap(m) for m in e2ap_msgs], **kpm_seeds, **rc_seeds}


def decoders() -> dict[str, tuple[str, Decoder]]:
    """Every decoder, by name, with the ASN.1 type its seeds come from."""
    out: dict[str, tuple[str, Decoder]] = {}
    for t in codec.TOP_LEVEL_TYPES:
        out[f"codec:{t}"] = (t, functools.partial(codec.decode, t))
    out["json:E2AP-PDU"] = ("E2AP-PDU", lambda b: jsonconv.decode_to_json("E2AP-PDU", b))
    out["e2ap.decode_e2ap"] = ("E2AP-PDU", e2ap.decode_e2ap)
    kpm_classes: tuple[Any, ...] = (
        kpm.KpmEventTrigger,
        kpm.KpmActionDefinition,
        kpm.KpmIndicationHeader,
        kpm.KpmIndicationMessage,
        kpm.KpmRanFunctionDefinition,
    )
    for cls in kpm_classes:
        out[f"kpm:{cls.__name__}"] = (cls.ASN_TYPE, functools.partial(kpm.decode_kpm, cls))
    rc_classes: tuple[Any, ...] = (
        rc.RcControlHeader,
        rc.RcControlMessage,
        rc.RcControlOutcome,
        rc.RcEventTrigger,
        rc.RcActionDefinition,
        rc.RcIndicationHeader,
        rc.RcIndicationMessage,
        rc.RcRanFunctionDefinition,
    )
    for rcls in rc_classes:
        out[f"rc:{rcls.__name__}"] = (rcls.ASN_TYPE, functools.partial(rc.decode_rc, rcls))
    fast = FastFormat3Decoder()
    out["fastpath:Format3"] = ("E2SM-KPM-IndicationMessage", fast.decode_message)
    from octoric.e2sm.native import native_decoder

    native = native_decoder()
    if native is not None:  # the Rust decoder (e2sm/native), where make setup built it
        out["native:Format3"] = ("E2SM-KPM-IndicationMessage", native.decode_message)
    out["envelope:RICindication"] = ("E2AP-PDU", decode_ric_indication)
    # the xApps' public edges: what they call on an indication must raise E2smDecodeError
    # alone, so an xApp catches one type (issue #40)
    seeds = seed_corpus()
    header = seeds["E2SM-KPM-IndicationHeader"][0]
    message = seeds["E2SM-KPM-IndicationMessage"][0]
    out["indication:parse_indication(message)"] = (
        "E2SM-KPM-IndicationMessage",
        lambda b: parse_indication(header, b),
    )
    out["indication:parse_indication(header)"] = (
        "E2SM-KPM-IndicationHeader",
        lambda b: parse_indication(b, message),
    )
    out["indication:parse_ric_indication"] = ("E2AP-PDU", parse_ric_indication)
    out["rc_fast:IndicationMessage"] = ("E2SM-RC-IndicationMessage", RcIndicationDecoder().decode)
    if native is not None:
        out["native:RICindication"] = ("E2AP-PDU", native.decode_ric_indication)
    return out


_HOSTILE = (0x00, 0x7F, 0x80, 0xBF, 0xC0, 0xC1, 0xC4, 0xFF)


def mutate(rng: random.Random, seeds: list[bytes]) -> bytes:
    if not seeds or rng.random() < 0.08:
        return rng.randbytes(rng.randrange(0, 64))
    data = bytearray(rng.choice(seeds))
    for _ in range(rng.choice((1, 1, 1, 2, 3, 8))):
        op = rng.randrange(7)
        if op == 0 and data:  # flip one bit
            i = rng.randrange(len(data))
            data[i] ^= 1 << rng.randrange(8)
        elif op == 1 and data:  # overwrite a byte
            data[rng.randrange(len(data))] = rng.randrange(256)
        elif op == 2 and data:  # hostile length / count octet
            data[rng.randrange(len(data))] = rng.choice(_HOSTILE)
        elif op == 3:  # truncate
            del data[rng.randrange(len(data) + 1) :]
        elif op == 4:  # append junk
            data += rng.randbytes(rng.randrange(1, 16))
        elif op == 5 and len(data) > 2:  # duplicate a slice
            i = rng.randrange(len(data))
            j = rng.randrange(i, min(len(data), i + 32) + 1)
            k = rng.randrange(len(data) + 1)
            data[k:k] = data[i:j]
        elif op == 6 and len(data) > 2:  # delete a slice
            i = rng.randrange(len(data))
            del data[i : i + rng.randrange(1, 8)]
    return bytes(data)


def fuzz_decoder(
    name: str,
    decode: Decoder,
    seeds: list[bytes],
    inputs: int,
    rng: random.Random,
    bound_s: float,
) -> DecoderReport:
    rep = DecoderReport(name)
    for _ in range(inputs):
        data = mutate(rng, seeds)
        t0 = time.perf_counter()
        try:
            decode(data)
            rep.decoded += 1
        except E2smDecodeError:
            rep.rejected += 1
        except Exception as e:  # a finding: the decoder leaked another exception type
            if len(rep.findings) < 20:
                tb = traceback.format_exception_only(type(e), e)[-1].strip()
                rep.findings.append(f"{data.hex()}: {tb}")
            else:
                rep.findings.append("")
        dt = time.perf_counter() - t0
        rep.inputs += 1
        rep.max_seconds = max(rep.max_seconds, dt)
        if dt > bound_s:
            rep.over_bound += 1
            if len(rep.findings) < 20:
                rep.findings.append(f"{data.hex()}: took {dt:.3f} s")
    return rep


def run(
    inputs_per_decoder: int,
    seed: int = 1,
    only: list[str] | None = None,
    bound_s: float = codec.DECODE_TIME_LIMIT_S + 0.5,
    out: Any = sys.stdout,
) -> list[DecoderReport]:
    corpus = seed_corpus()
    reports = []
    for name, (type_name, decode) in decoders().items():
        if only and not any(o in name for o in only):
            continue
        rng = random.Random(f"{seed}:{name}")
        t0 = time.monotonic()
        rep = fuzz_decoder(
            name, decode, corpus.get(type_name, []), inputs_per_decoder, rng, bound_s
        )
        print(
            f"{name:<44} inputs={rep.inputs} decoded={rep.decoded} rejected={rep.rejected} "
            f"findings={len(rep.findings)} max={rep.max_seconds * 1000:.1f}ms "
            f"({time.monotonic() - t0:.0f}s)",
            file=out,
            flush=True,
        )
        for f in rep.findings[:5]:
            print(f"    {f[:300]}", file=out)
        reports.append(rep)
    return reports


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m octoric.e2sm.fuzz")
    ap.add_argument("--inputs-per-decoder", type=int, default=100_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--only", action="append", help="substring of the decoder names to run")
    args = ap.parse_args(argv)
    t0 = time.monotonic()
    reports = run(args.inputs_per_decoder, args.seed, args.only)
    total = sum(r.inputs for r in reports)
    findings = sum(len(r.findings) for r in reports)
    worst = max((r.max_seconds for r in reports), default=0.0)
    print(
        f"summary: {len(reports)} decoders, {total} inputs, {findings} findings, "
        f"slowest input {worst * 1000:.1f} ms, {time.monotonic() - t0:.0f} s"
    )
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
