"""Every fact two octoric processes must agree on, in one place (``octoric.contracts``).

Standard library only: senders, gNB-side tools and the xApps' pure algorithm cores may import
it without pulling in the rest of octoric.

| module | holds |
|---|---|
| ``message_types`` | RMR message types: O-RAN SC's numbers and octoric's (30500+) |
| ``ports`` | default ports of the embedded deployment |
| ``kpm`` | E2SM-KPM RAN function id/OID, measurement names, how a granule aggregates them |
| ``rc`` | E2SM-RC RAN function id/OID, REPORT parameter ids, CONTROL action 100 parameters |
| ``feedback`` | the OCC feedback datagrams (JSON and RTCP REMB + OCCF): encode, parse, a listener |
| ``ho_event`` | the 30501 OCTORIC_HO_EVENT payload |
| ``schemas`` | JSON schemas: 30500, 30501, 30502, A1 policy type 30500 |
| ``octopus_header`` | the Octopus packet header codec and its shared test vectors |
| ``ue_key`` | the UE key by which xApps, messages, REST APIs and A1 policies name a UE |
"""
