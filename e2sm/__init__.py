"""octoric.e2sm: E2AP v3, E2SM-KPM v04.00 and E2SM-RC v05.00 codecs (aligned PER).

Modules (import the one you need; this package import stays light):

- ``e2ap``       E2AP message dataclasses, ``encode_e2ap`` / ``decode_e2ap``
- ``e2ap_ies``   the E2AP IEs those messages are made of
- ``kpm``        E2SM-KPM dataclasses, action definition builders (styles 1-5), RAN function
- ``rc``         E2SM-RC dataclasses: CONTROL style 1 (+ vendor action 100), REPORT 2/4
- ``common``     E2SM common IEs (UeId, Guami, Cgi), NTP timestamps
- ``indication`` KPM indication -> UE x metric x granule numpy arrays (``parse_indication``)
- ``fastpath``   the specialised Format 3 decoder behind ``parse_indication``
- ``fastenc``    the fast KPM Format 3 encoder (the gNB agent's)
- ``per``        the aligned-PER bit reader / writer and length determinant under them
- ``envelope``   the E2AP envelope codec (e2term's relay, the RIC indication fast paths)
- ``transport``  the E2 transport (SCTP or TCP framing)
- ``node_session`` the E2 node side of E2AP (the simulator's agent, the scripted node)
- ``codec``      the generic pycrate codec (pycrate values), limits, counters
- ``jsonconv``   the JSON convention of ``octoric e2sm decode/encode``
- ``errors``     ``E2smDecodeError`` / ``E2smEncodeError``
"""
