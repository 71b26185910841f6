"""Aligned PER (X.691) bits and length determinants: the one reader and writer under the fast
codecs (``fastpath``, ``fastenc``) and the E2AP envelope (``envelope``).

Length determinants (X.691 10.9, aligned, unconstrained): a length below 128 is one octet
``0nnnnnnn``; below 16384 two octets ``10nnnnnn nnnnnnnn``; longer contents go in fragments,
each ``11000mmm`` (m = 1..4 blocks of 16K octets) followed by m x 16384 octets, ended by an
ordinary (possibly zero) length and the remaining octets.

Errors: every read is bounds-checked; a malformed or out-of-range read raises ``PerError``
(a ``ValueError``) saying what and at which byte. Values the writer does not write raise
``Unsupported`` (also a ``ValueError``).
"""

from __future__ import annotations

FRAGMENT = 16384  # X.691 10.9.3.8: the block a fragment length counts in


class PerError(ValueError):
    """Malformed aligned-PER input: ``what`` went wrong at byte ``offset``."""

    def __init__(self, what: str, offset: int) -> None:
        super().__init__(f"{what} at byte {offset}")
        self.what = what
        self.offset = offset


class Unsupported(ValueError):
    """The value uses something the fast writers do not write (use the generic codec)."""


# --- octet-level length determinants ---------------------------------------------------------


def read_length_prefixed(data: bytes, pos: int) -> tuple[bytes, int]:
    """The octets an aligned length determinant at ``data[pos]`` announces (fragments
    joined), and the position after them: an open type or an unconstrained OCTET STRING."""
    out = bytearray()
    n_total = len(data)
    while True:
        if pos >= n_total:
            raise PerError("length determinant missing", pos)
        b = data[pos]
        if b & 0x80 == 0:
            n, pos = b, pos + 1
            frag = False
        elif b & 0xC0 == 0x80:
            if pos + 1 >= n_total:
                raise PerError("2-octet length truncated", pos)
            n, pos = ((b & 0x3F) << 8) | data[pos + 1], pos + 2
            frag = False
        else:
            m = b & 0x3F
            if not 1 <= m <= 4:
                raise PerError(f"bad fragment multiplier {m}", pos)
            n, pos = m * FRAGMENT, pos + 1
            frag = True
        if pos + n > n_total:
            raise PerError(f"length {n} runs past the end ({n_total - pos} left)", pos)
        if not frag and not out:  # the usual case: one piece, no copy into ``out``
            return data[pos : pos + n], pos + n
        out += data[pos : pos + n]
        pos += n
        if not frag:
            return bytes(out), pos


def write_length(n: int) -> bytes:
    """An aligned length determinant below 16K (callers that may need fragments use
    :func:`length_prefixed`)."""
    if n < 128:
        return bytes((n,))
    if n < FRAGMENT:
        return bytes((0x80 | (n >> 8), n & 0xFF))
    raise Unsupported(f"a length of {n} needs fragments")


def length_prefixed(content: bytes) -> bytes:
    """Aligned length determinant + ``content``, with 16K fragmentation: what an open type or
    an unconstrained OCTET STRING is on the wire."""
    n = len(content)
    if n < 128:
        return bytes((n,)) + content
    if n < FRAGMENT:
        return bytes((0x80 | (n >> 8), n & 0xFF)) + content
    parts = []
    pos = 0
    while n - pos >= FRAGMENT:
        m = min(4, (n - pos) // FRAGMENT)
        parts.append(bytes((0xC0 | m,)))
        parts.append(content[pos : pos + m * FRAGMENT])
        pos += m * FRAGMENT
    rest = n - pos
    parts.append(write_length(rest))
    parts.append(content[pos:])
    return b"".join(parts)


# --- bit-level reader and writer -------------------------------------------------------------


class BitReader:
    """Bits of ``data`` from bit ``pos``. The fast decoders read ``data``/``pos`` directly in
    their innermost loops, so both are plain attributes."""

    __slots__ = ("data", "nbits", "pos")

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0
        self.nbits = len(data) * 8

    def bits(self, n: int) -> int:
        p = self.pos
        end = p + n
        if end > self.nbits:
            raise PerError(f"{n} bits past the end", p >> 3)
        b0 = p >> 3
        b1 = (end + 7) >> 3
        v = int.from_bytes(self.data[b0:b1], "big") >> ((b1 << 3) - end)
        self.pos = end
        return v & ((1 << n) - 1)

    def align(self) -> None:
        self.pos = (self.pos + 7) & ~7

    def octets(self, n: int) -> bytes:
        """``n`` aligned octets (aligns first)."""
        self.pos = (self.pos + 7) & ~7
        b = self.pos >> 3
        if b + n > len(self.data):
            raise PerError(f"{n} octets run past the end", b)
        self.pos += n << 3
        return self.data[b : b + n]

    def uint(self, nbytes: int) -> int:
        return int.from_bytes(self.octets(nbytes), "big")

    def length(self) -> int:
        """An aligned unconstrained length determinant of one piece (a fragment raises
        ``PerError``: use :meth:`length_prefixed` where contents may be 16K or more)."""
        self.pos = (self.pos + 7) & ~7
        b = self.pos >> 3
        if b >= len(self.data):
            raise PerError("length determinant missing", b)
        first = self.data[b]
        if first < 0x80:
            self.pos += 8
            return first
        if first < 0xC0:
            if b + 1 >= len(self.data):
                raise PerError("2-octet length truncated", b)
            self.pos += 16
            return ((first & 0x3F) << 8) | self.data[b + 1]
        raise PerError("fragmented length", b)

    def length_prefixed(self) -> bytes:
        """The octets of an open type or unconstrained OCTET STRING (fragments joined)."""
        value, end = read_length_prefixed(self.data, (self.pos + 7) >> 3)
        self.pos = end << 3
        return value

    def at_end(self) -> bool:
        """Only padding (if anything) is left after the current bit."""
        return (self.pos + 7) >> 3 == len(self.data)


class BitWriter:
    """Bits into a bytearray; ``acc``/``n`` hold the bits of the unfinished octet. The fast
    encoders append aligned octets to ``buf`` directly when ``n`` is 0."""

    __slots__ = ("acc", "buf", "n")

    def __init__(self) -> None:
        self.buf = bytearray()
        self.acc = 0
        self.n = 0

    def bits(self, v: int, n: int) -> None:
        acc = (self.acc << n) | v
        n += self.n
        buf = self.buf
        while n >= 8:
            n -= 8
            buf.append((acc >> n) & 0xFF)
        self.acc = acc & ((1 << n) - 1)
        self.n = n

    def align(self) -> None:
        if self.n:
            self.buf.append((self.acc << (8 - self.n)) & 0xFF)
            self.acc = 0
            self.n = 0

    def octets(self, b: bytes) -> None:
        """Aligned octets (aligns first)."""
        if self.n:
            self.align()
        self.buf += b

    def length(self, n: int) -> None:
        """An aligned unconstrained length determinant below 16K (``Unsupported`` above)."""
        if self.n:
            self.align()
        if n < 128:
            self.buf.append(n)
        elif n < FRAGMENT:
            self.buf.append(0x80 | (n >> 8))
            self.buf.append(n & 0xFF)
        else:
            raise Unsupported(f"a length of {n} needs fragments")

    def done(self) -> bytes:
        self.align()
        return bytes(self.buf)
