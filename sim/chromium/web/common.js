// Shared by sender.html and receiver.html: the page server's signalling socket, getStats()
// sampling every 100 ms (posted once a second) and error reporting. The page server
// (octoric/sim/chromium/pageserver.py) writes what is posted as JSONL into the run folder.

export const params = new URLSearchParams(location.search);
export const role = document.body.dataset.role;

export async function post(path, body) {
  try {
    await fetch(path, {method: "POST", body: JSON.stringify(body),
                       headers: {"Content-Type": "application/json"}});
  } catch (e) {
    // the page server is gone: the run is ending, nothing to report to
  }
}

export function log(msg) {
  return post(`/log/${role}`, {t: Date.now(), msg: String(msg)});
}
window.addEventListener("error", (e) => log(`error: ${e.message} at ${e.filename}:${e.lineno}`));
window.addEventListener("unhandledrejection", (e) => log(`unhandled rejection: ${e.reason}`));

// The signalling socket: JSON messages relayed to the other role by the page server.
export function signalling(onMessage) {
  const ws = new WebSocket(`ws://${location.host}/signal/${role}`);
  ws.onmessage = (ev) => onMessage(JSON.parse(ev.data));
  return new Promise((resolve, reject) => {
    ws.onopen = () => resolve((msg) => ws.send(JSON.stringify(msg)));
    ws.onerror = () => reject(new Error("signalling socket failed"));
  });
}

// Non-trickle ICE: the SDP is sent once every host candidate is in it (no STUN/TURN here).
export function gathered(pc) {
  if (pc.iceGatheringState === "complete") return Promise.resolve();
  return new Promise((resolve) => {
    pc.addEventListener("icegatheringstatechange", () => {
      if (pc.iceGatheringState === "complete") resolve();
    });
  });
}

const KEEP = {
  "outbound-rtp": ["bytesSent", "headerBytesSent", "packetsSent", "framesSent", "framesEncoded",
                   "keyFramesEncoded", "targetBitrate", "qpSum", "framesPerSecond", "frameWidth",
                   "frameHeight", "qualityLimitationReason", "qualityLimitationDurations",
                   "qualityLimitationResolutionChanges", "totalEncodeTime", "totalPacketSendDelay",
                   "retransmittedBytesSent", "nackCount", "pliCount", "firCount", "encoderImplementation"],
  "inbound-rtp": ["bytesReceived", "headerBytesReceived", "packetsReceived", "packetsLost",
                  "framesReceived", "framesDecoded", "framesDropped", "keyFramesDecoded",
                  "framesPerSecond", "frameWidth", "frameHeight", "freezeCount",
                  "totalFreezesDuration", "pauseCount", "totalPausesDuration", "jitter",
                  "jitterBufferDelay", "jitterBufferTargetDelay", "jitterBufferEmittedCount",
                  "qpSum", "totalDecodeTime", "totalInterFrameDelay", "nackCount", "pliCount",
                  "decoderImplementation", "fecPacketsReceived", "fecBytesReceived",
                  "fecPacketsDiscarded", "retransmittedPacketsReceived",
                  "retransmittedBytesReceived"],
  "remote-inbound-rtp": ["roundTripTime", "totalRoundTripTime", "roundTripTimeMeasurements",
                         "packetsLost", "fractionLost", "jitter"],
  "candidate-pair": ["availableOutgoingBitrate", "availableIncomingBitrate",
                     "currentRoundTripTime", "bytesSent", "bytesReceived"],
};

// One sample: the video RTP streams' fields above and the selected candidate pair's.
async function sample(pc, extra) {
  const report = await pc.getStats();
  const s = {t: Date.now()};
  let pairId = null;
  report.forEach((r) => {
    if (r.type === "transport" && r.selectedCandidatePairId) pairId = r.selectedCandidatePairId;
  });
  report.forEach((r) => {
    const keep = KEEP[r.type];
    if (!keep) return;
    if (r.type === "candidate-pair" && r.id !== pairId) return;
    if (r.type !== "candidate-pair" && r.kind !== "video") return;
    const o = {};
    for (const k of keep) if (r[k] !== undefined) o[k] = r[k];
    s[r.type] = o;
  });
  Object.assign(s, extra ? extra() : {});
  return s;
}

// getStats() every periodMs, posted in batches once a second until stop() resolves.
export function startStats(pc, extra, periodMs = 100) {
  let batch = [];
  const poll = setInterval(async () => batch.push(await sample(pc, extra)), periodMs);
  const flush = setInterval(() => {
    if (batch.length) post(`/stats/${role}`, batch);
    batch = [];
  }, 1000);
  return async () => {
    clearInterval(poll);
    clearInterval(flush);
    batch.push(await sample(pc, extra));
    await post(`/stats/${role}`, batch);
  };
}
