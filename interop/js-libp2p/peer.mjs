// A js-libp2p peer for ScaleChain (docs/PROTOCOL.md §13): TCP + noise + yamux, identify, ping,
// gossipsub (anonymous messages, BLAKE3 message ids) on the chain's three topics, and the sync
// request-response protocol's Hello handshake (both directions).
//
// usage: node peer.mjs <node multiaddr ending /p2p/<id>> [options]
//   --chain-id HEX        the full 32-byte chain id (default: the devnet chain of Appendix A.1)
//   --publish-tx HEX      publish this transaction (§2.6 encoding) as a 1-tx batch on the
//                         txs topic once the node is in our mesh (repeatable)
//   --seconds N           run N seconds then exit (default 30)
//   --protocols a,b       gossipsub protocol ids to offer (default: the library's)
//   --no-hello            do not run the sync protocol (to show what the node does then)
//   --json                one JSON object per line instead of text
//   --key-seed HEX        a fixed identity (32-byte ed25519 seed) instead of a new one
//   --listen MULTIADDR    where to listen (default /ip4/127.0.0.1/tcp/0)
//   --no-dial             do not dial: wait for the node to dial us (the target's /p2p/<id> is still used)
//   --second-connection-after S  open a second connection to the node after S seconds
//   --close-first-after S  close the first connection after S seconds (with the above: a peer
//                         whose first connection ends while a second one lives on)
//   --watch HEX           mark gossip whose payload contains these bytes (e.g. a txid: a compact
//                         block references it; or a raw transaction: a whole block carries it)
//   --no-identify         leave identify out (to show what it is needed for)
//   --gossip-defaults     the library's signature policy and message ids (to show the failure)
// It prints one line per event: `connected`, `hello`, `subscription`, `gossip`, `published`,
// and a `summary` line at the end; exit status 0.
import './polyfill.mjs'
import { createLibp2p } from 'libp2p'
import { tcp } from '@libp2p/tcp'
import { noise } from '@chainsafe/libp2p-noise'
import { yamux } from '@chainsafe/libp2p-yamux'
import { identify } from '@libp2p/identify'
import { ping } from '@libp2p/ping'
import { multiaddr } from '@multiformats/multiaddr'
import { blake3 } from '@noble/hashes/blake3.js'
import { sha256 } from '@noble/hashes/sha2.js'
import { generateKeyPairFromSeed } from '@libp2p/crypto/keys'
import { peerIdFromString } from '@libp2p/peer-id'

// js-libp2p 3.x ships gossipsub as @libp2p/gossipsub (2.x: @chainsafe/libp2p-gossipsub; the
// generations must not be mixed, see README.md).
import { gossipsub } from '@libp2p/gossipsub'

const DEVNET_CHAIN_ID = 'd393b261149bbb818acf3d0ed23b7631064f55cd01c04733ba1061c37ce3fe6a'

function parseArgs (argv) {
  const o = { target: null, chainId: DEVNET_CHAIN_ID, publishTx: [], seconds: 30, protocols: null, hello: true, json: false, identify: true, gossipDefaults: false, keySeed: null, listen: '/ip4/127.0.0.1/tcp/0', dial: true, secondAfter: null, closeFirstAfter: null, watch: [] }
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]
    if (a === '--chain-id') o.chainId = argv[++i]
    else if (a === '--publish-tx') o.publishTx.push(argv[++i])
    else if (a === '--seconds') o.seconds = Number(argv[++i])
    else if (a === '--protocols') o.protocols = argv[++i].split(',')
    else if (a === '--no-hello') o.hello = false
    else if (a === '--json') o.json = true
    else if (a === '--no-identify') o.identify = false
    else if (a === '--key-seed') o.keySeed = argv[++i]
    else if (a === '--listen') o.listen = argv[++i]
    else if (a === '--no-dial') o.dial = false
    else if (a === '--watch') o.watch.push(argv[++i].toLowerCase())
    else if (a === '--second-connection-after') o.secondAfter = Number(argv[++i])
    else if (a === '--close-first-after') o.closeFirstAfter = Number(argv[++i])
    else if (a === '--gossip-defaults') o.gossipDefaults = true
    else if (!a.startsWith('--') && o.target == null) o.target = a
    else throw new Error(`unknown argument ${a}`)
  }
  if (o.target == null) throw new Error('usage: node peer.mjs <multiaddr/p2p/id> [--publish-tx HEX] [--seconds N]')
  return o
}

const hex = (b) => Buffer.from(b).toString('hex')
const unhex = (s) => new Uint8Array(Buffer.from(s, 'hex'))
const t0 = Date.now()

let JSON_OUT = false
function log (event, fields = {}) {
  const ms = Date.now() - t0
  if (JSON_OUT) console.log(JSON.stringify({ ms, event, ...fields }))
  else console.log(`[${(ms / 1000).toFixed(3)}s] ${event} ${Object.entries(fields).map(([k, v]) => `${k}=${typeof v === 'object' ? JSON.stringify(v) : v}`).join(' ')}`)
}

// ---- byte helpers (§1.3: little-endian integers) ----
class Reader {
  constructor (b) { this.b = b; this.o = 0; this.dv = new DataView(b.buffer, b.byteOffset, b.byteLength) }
  left () { return this.b.length - this.o }
  need (n) { if (this.left() < n) throw new Error(`short: need ${n} at ${this.o}, have ${this.left()}`) }
  u8 () { this.need(1); return this.b[this.o++] }
  u32 () { this.need(4); const v = this.dv.getUint32(this.o, true); this.o += 4; return v }
  u64 () { this.need(8); const v = this.dv.getBigUint64(this.o, true); this.o += 8; return v }
  bytes (n) { this.need(n); const v = this.b.subarray(this.o, this.o + n); this.o += n; return v }
  hash () { return this.bytes(32) }
  string () { const n = this.u32(); return new TextDecoder('utf-8', { fatal: true }).decode(this.bytes(n)) }
}
function cat (...parts) {
  const n = parts.reduce((s, p) => s + p.length, 0)
  const out = new Uint8Array(n); let o = 0
  for (const p of parts) { out.set(p, o); o += p.length }
  return out
}
const u8 = (v) => Uint8Array.of(v)
function u32le (v) { const b = new Uint8Array(4); new DataView(b.buffer).setUint32(0, v, true); return b }
function u64le (v) { const b = new Uint8Array(8); new DataView(b.buffer).setBigUint64(0, BigInt(v), true); return b }
function u32be (v) { const b = new Uint8Array(4); new DataView(b.buffer).setUint32(0, v, false); return b }
const str = (s) => { const b = new TextEncoder().encode(s); return cat(u32le(b.length), b) }

// ---- §13.3 sync bodies ----
const ROLE = { 0: 'bootstrap', 1: 'peer', 2: 'miner' }
function encodeHello (tag, chainId, role, tipHeight, tipHash, agent) {
  return cat(u8(tag), u32le(1), chainId, u8(role), u64le(tipHeight), tipHash, str(agent))
}
function decodeHello (r) {
  return { version: r.u32(), chain_id: hex(r.hash()), role: ROLE[r.u8()] ?? 'invalid', tip_height: Number(r.u64()), tip_hash: hex(r.hash()), agent: r.string() }
}
const refused = (reason) => cat(u8(4), str(reason))

// Reads one frame (u32 BE length ‖ body) from a libp2p v3 stream (an async iterable of chunks).
async function readFrame (stream, max) {
  let buf = new Uint8Array(0)
  for await (const chunk of (stream.source ?? stream)) { // 2.x: .source; 3.x: the stream
    buf = cat(buf, chunk.subarray ? chunk.subarray() : chunk)
    if (buf.length >= 4) {
      const n = new DataView(buf.buffer, buf.byteOffset).getUint32(0, false)
      if (n > max) throw new Error(`frame of ${n} bytes, at most ${max}`)
      if (buf.length >= 4 + n) return buf.subarray(4, 4 + n)
    }
  }
  throw new Error(`stream ended after ${buf.length} bytes`)
}
async function writeFrame (stream, body) {
  const frame = cat(u32be(body.length), body)
  if (typeof stream.send === 'function') { // js-libp2p 3.x
    if (!stream.send(frame)) await stream.onDrain()
    await stream.close()
  } else { // 2.x: a sink that closes the write side when the source ends
    await stream.sink([frame])
  }
}

// ---- §2 block header, for logging gossiped blocks ----
function blockSummary (data) {
  const r = new Reader(data)
  const version = r.u32(); const height = Number(r.u64())
  // the block hash is SHA-256 of the 124-byte header on a `sha256` chain (§2.7, §3.1)
  return { version, height, hash: hex(sha256(data.subarray(0, 124))) }
}

async function main () {
  const o = parseArgs(process.argv.slice(2))
  JSON_OUT = o.json
  const chainId = unhex(o.chainId)
  const id = o.chainId.slice(0, 16)
  const topics = { txs: `scalechain/${id}/txs/1`, blocks: `scalechain/${id}/blocks/1`, cblocks: `scalechain/${id}/cblocks/1` }
  const topicName = Object.fromEntries(Object.entries(topics).map(([k, v]) => [v, k]))
  const syncProto = `/scalechain/${id}/sync/1`
  const genesis = unhex(o.chainId) // the chain id is the genesis block hash (§3.1)

  const gsOpts = {
    // §13.1: anonymous messages (no from/seqno/signature/key) and ids = BLAKE3(payload)[..20]
    globalSignaturePolicy: 'StrictNoSign',
    msgIdFn: (msg) => blake3(msg.data).subarray(0, 20),
    allowPublishToZeroTopicPeers: true,
    emitSelf: false,
    maxInboundDataLength: 16 * 1024 * 1024 + 64 * 1024,
    heartbeatInterval: 700
  }
  if (o.protocols) gsOpts.protocols = o.protocols
  if (o.gossipDefaults) { delete gsOpts.globalSignaturePolicy; delete gsOpts.msgIdFn }
  const services = {
    identify: identify({ protocolPrefix: 'ipfs', agentVersion: 'scalechain-jspeer/0.1.0' }),
    ping: ping(),
    pubsub: gossipsub(gsOpts)
  }
  if (!o.identify) delete services.identify
  const privateKey = o.keySeed ? await generateKeyPairFromSeed('Ed25519', unhex(o.keySeed)) : undefined
  const node = await createLibp2p({
    privateKey,
    addresses: { listen: [o.listen] },
    transports: [tcp()],
    connectionEncrypters: [noise()],
    streamMuxers: [yamux()],
    services
  })
  const pubsub = node.services.pubsub
  const stats = { peerSubscriptions: [], blocks: 0, cblocks: 0, txBatches: 0, published: 0, helloFromNode: null }

  node.addEventListener('connection:open', (e) => {
    const c = e.detail
    log('connection:open', { peer: c.remotePeer.toString(), addr: c.remoteAddr.toString(), direction: c.direction, muxer: c.multiplexer, encryption: c.encryption })
  })
  node.addEventListener('connection:close', (e) => {
    const c = e.detail
    log('connection:close', { peer: c.remotePeer.toString(), direction: c.direction })
  })
  node.addEventListener('peer:identify', (e) => {
    const d = e.detail
    log('identify', { peer: d.peerId.toString(), protocolVersion: d.protocolVersion, agentVersion: d.agentVersion, protocols: d.protocols })
  })
  pubsub.addEventListener('subscription-change', (e) => {
    const { peerId, subscriptions } = e.detail
    for (const s of subscriptions) {
      stats.peerSubscriptions.push(`${s.subscribe ? '+' : '-'}${topicName[s.topic] ?? s.topic}`)
      log('subscription', { peer: peerId.toString(), topic: s.topic, subscribe: s.subscribe })
    }
  })
  pubsub.addEventListener('gossipsub:graft', (e) => log('graft', { peer: e.detail.peerId, topic: e.detail.topic, direction: e.detail.direction }))
  pubsub.addEventListener('message', (e) => {
    const m = e.detail
    const kind = topicName[m.topic] ?? m.topic
    const f = { topic: kind, bytes: m.data.length, id: hex(blake3(m.data).subarray(0, 20)) }
    try {
      if (kind === 'blocks' || kind === 'cblocks') Object.assign(f, blockSummary(m.data))
      if (kind === 'txs') f.count = new Reader(m.data).u32()
    } catch (err) { f.error = err.message }
    if (o.watch.length > 0) {
      const h = hex(m.data)
      f.watched = o.watch.some((w) => h.includes(w) || h.includes(hex(unhex(w).reverse())))
    }
    if (kind === 'blocks') stats.blocks++
    else if (kind === 'cblocks') stats.cblocks++
    else if (kind === 'txs') stats.txBatches++
    log('gossip', f)
  })

  // The sync protocol: answer the node's requests (Hello; an empty mempool; refuse the rest).
  let tipHeight = 0; let tipHash = genesis
  if (o.hello) {
    await node.handle(syncProto, async (...args) => {
      // 3.x calls handler(stream, connection), 2.x handler({ stream, connection })
      const [stream, connection] = args[0]?.stream ? [args[0].stream, args[0].connection] : args
      try {
        const body = await readFrame(stream, 1 << 20)
        const r = new Reader(body)
        const tag = r.u8()
        let resp
        if (tag === 0) {
          const h = decodeHello(r)
          if (stats.helloFromNode == null) log('hello-request', { peer: connection.remotePeer.toString(), ...h })
          stats.helloFromNode = h
          resp = encodeHello(0, chainId, 1, tipHeight, tipHash, 'scalechain-jspeer/0.1.0')
        } else if (tag === 4) { // GetPoolTxids: our pool is empty
          resp = cat(u8(5), u32le(0))
        } else if (tag === 3) { // GetTxs: none found
          resp = cat(u8(3), u32le(0))
        } else {
          resp = refused('not served by the js peer')
        }
        await writeFrame(stream, resp)
      } catch (err) {
        log('sync-inbound-error', { error: err.message })
        stream.abort(err)
      }
    }, { runOnLimitedConnection: false })
  }

  for (const t of Object.values(topics)) pubsub.subscribe(t)

  const target = multiaddr(o.target)
  log('start', { self: node.peerId.toString(), listen: node.getMultiaddrs().map(String), dial: o.target, gossipsubProtocols: pubsub.protocols ?? gsOpts.protocols })
  const remote = peerIdFromString(target.getComponents().find((c) => c.name === 'p2p').value)
  if (o.dial) await node.dial(target)
  else {
    while (node.getConnections(remote).length === 0) await new Promise((resolve) => setTimeout(resolve, 100))
  }

  if (o.hello) {
    // Our Hello request; the node's answer gives its tip and role.
    try {
      const s = await node.dialProtocol(remote, syncProto)
      await writeFrame(s, encodeHello(0, chainId, 1, 0, genesis, 'scalechain-jspeer/0.1.0'))
      const r = new Reader(await readFrame(s, 96 << 20))
      const tag = r.u8()
      if (tag === 0) log('hello-response', decodeHello(r))
      else if (tag === 4) log('hello-refused', { reason: r.string() })
    } catch (err) { log('hello-error', { error: err.message }) }
  }

  // Publish the given transactions once the node is in our mesh (or after 3 s).
  if (o.publishTx.length > 0) {
    const deadline = Date.now() + 5000
    while (Date.now() < deadline && !pubsub.getMeshPeers(topics.txs).some((p) => p === remote.toString())) {
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
    log('mesh', { txs: pubsub.getMeshPeers(topics.txs), topicPeers: pubsub.getSubscribers(topics.txs).map(String) })
    for (const txHex of o.publishTx) {
      const batch = cat(u32le(1), unhex(txHex))
      try {
        const res = await pubsub.publish(topics.txs, batch)
        stats.published++
        log('published', { topic: 'txs', bytes: batch.length, id: hex(blake3(batch).subarray(0, 20)), recipients: res.recipients.map(String) })
      } catch (err) { log('publish-error', { error: err.message }) }
    }
  }

  if (o.secondAfter != null) {
    setTimeout(() => {
      node.dial(target, { force: true }).then((c) => log('second-connection', { id: c.id, direction: c.direction }))
        .catch((err) => log('second-connection-error', { error: err.message }))
    }, o.secondAfter * 1000)
  }
  if (o.closeFirstAfter != null) {
    setTimeout(() => {
      const first = node.getConnections(remote)[0]
      if (first) { log('closing-first', { id: first.id }); first.close().catch(() => {}) }
    }, o.closeFirstAfter * 1000)
  }
  const counts = () => ({ cblocks: stats.cblocks, blocks: stats.blocks })
  const ticker = setInterval(() => log('tick', { ...counts(), connections: node.getConnections(remote).length, mesh_cblocks: pubsub.getMeshPeers(topics.cblocks).length, subscribers: pubsub.getSubscribers(topics.cblocks).length }), 2000)
  await new Promise((resolve) => setTimeout(resolve, o.seconds * 1000))
  clearInterval(ticker)
  log('summary', {
    node_subscriptions_seen: stats.peerSubscriptions,
    blocks: stats.blocks, cblocks: stats.cblocks, tx_batches: stats.txBatches, published: stats.published,
    mesh: Object.fromEntries(Object.entries(topics).map(([k, t]) => [k, pubsub.getMeshPeers(t).length])),
    connections: node.getConnections(remote).length
  })
  await node.stop()
  process.exit(0)
}

main().catch((err) => { console.error(err); process.exit(1) })
