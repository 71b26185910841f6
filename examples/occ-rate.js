// occ-rate.js — cap a WebRTC video sender at the rate the RAN's OCC xApp estimates for its flow.
//
// The OCC xApp (docs/occ.md) sends, per UE flow, JSON feedback: {"target_bps": N} when it has
// an estimate of the bandwidth the cell can give the flow, {"fallback": true} when it has none
// (hand control back to the browser's own congestion control). The cell or the operator's
// side delivers it to the application server (octoric relays it as UDP datagrams into the
// server's network namespace); the server forwards each message to the page as a Server-Sent
// Event whose data is that JSON. This module applies it with the standard WebRTC API:
// RTCRtpSender.setParameters() with encodings[0].maxBitrate. Nothing else is changed: the
// browser's GCC keeps running underneath and may send less than the cap (congestion), never
// more. Works in any browser with RTCRtpSender.setParameters (Chromium, Firefox, Safari).
//
//   import { followOccRate } from "./occ-rate.js";
//   const sender = pc.addTrack(track, stream);
//   const occ = followOccRate(sender, "/occ/events", { minBps: 30000 });
//   ...
//   occ.state   // {target_bps, applied_bps, fallback, updates, errors, last_error}
//   occ.stop()  // close the event stream and remove the cap
//
// Options: minBps / maxBps clamp the target to the encoder's useful range (a cap below the
// encoder's minimum only starves it); onApply(bps|null) is called after each cap is applied
// (null: removed). Updates are applied one at a time, the newest wins: a burst of feedback
// costs one setParameters per round trip into the encoder, not one per message.

export class OccRate {
  constructor(sender, url, { minBps = 30000, maxBps = Infinity, onApply = null } = {}) {
    this.sender = sender;
    this.url = url;
    this.minBps = minBps;
    this.maxBps = maxBps;
    this.onApply = onApply;
    this.state = {
      target_bps: null, applied_bps: null, fallback: true, updates: 0, errors: 0,
      last_error: null,
    };
    this._pending = undefined; // the newest cap not yet applied (null: remove the cap)
    this._busy = false;
    this._source = null;
  }

  start() {
    this._source = new EventSource(this.url);
    this._source.onmessage = (ev) => {
      let msg;
      try {
        msg = JSON.parse(ev.data);
      } catch (e) {
        this._fail(e);
        return;
      }
      this.handle(msg);
    };
    return this;
  }

  // One feedback message (also usable without EventSource, e.g. from a WebSocket).
  handle(msg) {
    if (msg && msg.fallback) {
      this.state.fallback = true;
      this.state.target_bps = null;
      this._request(null);
    } else if (msg && Number.isFinite(msg.target_bps)) {
      this.state.fallback = false;
      this.state.target_bps = msg.target_bps;
      this._request(Math.round(Math.min(Math.max(msg.target_bps, this.minBps), this.maxBps)));
    }
  }

  stop() {
    if (this._source) this._source.close();
    this._source = null;
    this._request(null);
  }

  _request(bps) {
    this._pending = bps;
    if (!this._busy) this._drain();
  }

  async _drain() {
    this._busy = true;
    while (this._pending !== undefined) {
      const bps = this._pending;
      this._pending = undefined;
      try {
        // setParameters wants the object getParameters returned (it carries a transaction id)
        const p = this.sender.getParameters();
        if (!p.encodings || p.encodings.length === 0) {
          // not negotiated yet: keep the newest cap and try again shortly
          if (this._pending === undefined) this._pending = bps;
          await new Promise((r) => setTimeout(r, 100));
          continue;
        }
        if (bps === null) delete p.encodings[0].maxBitrate;
        else p.encodings[0].maxBitrate = bps;
        await this.sender.setParameters(p);
        this.state.applied_bps = bps;
        this.state.updates += 1;
        if (this.onApply) this.onApply(bps);
      } catch (e) {
        this._fail(e);
      }
    }
    this._busy = false;
  }

  _fail(e) {
    this.state.errors += 1;
    this.state.last_error = String(e);
  }
}

export function followOccRate(sender, url, options = {}) {
  return new OccRate(sender, url, options).start();
}
