-- Wireshark dissector for ldafwd's in-band control frames (EtherType 0x88B5),
-- protocol version 2 as docs/protocol.md specifies it: Hello, End, Fragment,
-- Request, Reply and Parity. Field names follow that document. Parity
-- frames are shown, not used to rebuild lost fragments. The HMAC tag is
-- shown, never verified (the dissector holds no key). Fragments of one part
-- (session, interval, MEC, kind) or one Request/Reply message are gathered
-- as the capture is read and shown reassembled in the frame that completes
-- them.
--
-- Use:  wireshark -X lua_script:scripts/wireshark/ldafwd.lua capture.pcap
--       tshark -X lua_script:scripts/wireshark/ldafwd.lua -r capture.pcap -V
-- or copy the file into Wireshark's personal plugins folder
-- (Help → About Wireshark → Folders). Display filter: ldafwd.

local ldafwd = Proto("ldafwd", "ldafwd control protocol")

local HEADER_LEN = 40
local TAG_LEN = 16
local END_LEN = 34
local EXCHANGE_HEADER_LEN = 12
local PARITY_HEADER_LEN = 6
local MAX_SHARDS = 256

local types = { [1] = "Hello", [2] = "End", [3] = "Fragment", [4] = "Request", [5] = "Reply", [6] = "Parity" }
local kinds = { [0] = "meta", [1] = "lda", [2] = "rda", [3] = "lds", [4] = "sample" }
-- Direction ids: data from port a to port b is 1 at both appliances.
local directions = { [1] = "a>b", [2] = "b>a" }
local messages = { [0x51] = "timestamp request", [0x46] = "cells request", [0x41] = "timestamp reply" } -- 'Q', 'F', 'A'


local f = {
  magic          = ProtoField.uint16("ldafwd.magic", "Magic", base.HEX),
  version        = ProtoField.uint8("ldafwd.version", "Version"),
  type           = ProtoField.uint8("ldafwd.type", "Type", base.DEC, types),
  flags          = ProtoField.uint8("ldafwd.flags", "Flags", base.HEX),
  insecure       = ProtoField.bool("ldafwd.flags.insecure", "Insecure (tag is all zero)", 8, nil, 0x01),
  reserved       = ProtoField.uint8("ldafwd.flags.reserved", "Reserved flags (must be 0)", base.HEX, nil, 0xFE),
  kind           = ProtoField.uint8("ldafwd.kind", "Kind", base.DEC, kinds),
  mec_id         = ProtoField.uint16("ldafwd.mec_id", "MEC id"),
  session_id     = ProtoField.uint64("ldafwd.session_id", "Session id", base.HEX),
  interval       = ProtoField.uint64("ldafwd.interval", "Interval"),
  sequence       = ProtoField.uint64("ldafwd.sequence", "Sequence"),
  fragment_index = ProtoField.uint16("ldafwd.fragment_index", "Fragment index"),
  fragment_count = ProtoField.uint16("ldafwd.fragment_count", "Fragment count"),
  direction      = ProtoField.uint16("ldafwd.direction", "Direction", base.DEC, directions),
  payload_length = ProtoField.uint16("ldafwd.payload_length", "Payload length"),
  tag            = ProtoField.bytes("ldafwd.tag", "Tag (HMAC-SHA256-128, not verified)"),
  trailer        = ProtoField.bytes("ldafwd.trailer", "Padding / FCS (ignored)"),

  end_start      = ProtoField.int64("ldafwd.end.interval_start", "Interval start (ns since the Unix epoch, sender clock)"),
  end_end        = ProtoField.int64("ldafwd.end.interval_end", "Interval end (ns)"),
  end_frames     = ProtoField.uint64("ldafwd.end.frames", "Data frames sent and recorded"),
  end_bytes      = ProtoField.uint64("ldafwd.end.bytes", "Their bytes"),
  end_lane       = ProtoField.uint16("ldafwd.end.lane", "Lane"),
  end_start_time = ProtoField.absolute_time("ldafwd.end.start_time", "Interval start", base.UTC),
  end_duration   = ProtoField.relative_time("ldafwd.end.duration", "Interval duration"),
  end_classes    = ProtoField.uint16("ldafwd.end.classes", "Classes with per-class counts"),
  end_class      = ProtoField.string("ldafwd.end.class", "Class frames"),

  hello_sent_at  = ProtoField.int64("ldafwd.hello.sent_at", "Sent at (ns since the Unix epoch, sender clock)"),
  hello_interval = ProtoField.int64("ldafwd.hello.interval_length", "Interval length (ns)"),
  hello_hash     = ProtoField.uint64("ldafwd.hello.configuration_hash", "Configuration hash", base.HEX),
  hello_lanes    = ProtoField.uint16("ldafwd.hello.lanes", "Lanes (End markers per interval)"),
  hello_clock    = ProtoField.string("ldafwd.hello.clock_source", "Clock source"),
  hello_mecs     = ProtoField.uint16("ldafwd.hello.mec_count", "MEC count"),
  hello_mec      = ProtoField.string("ldafwd.hello.mec", "MEC"),
  hello_parts    = ProtoField.uint16("ldafwd.hello.part_count", "Part count"),
  part_mec       = ProtoField.uint16("ldafwd.hello.part.mec_id", "MEC id"),
  part_kind      = ProtoField.uint8("ldafwd.hello.part.kind", "Kind", base.DEC, kinds),
  hello_config   = ProtoField.string("ldafwd.hello.configuration", "Configuration"),
  hello_sent_time = ProtoField.absolute_time("ldafwd.hello.sent_time", "Sent at", base.UTC),
  hello_length   = ProtoField.relative_time("ldafwd.hello.interval_duration", "Interval length"),

  fragment_data  = ProtoField.bytes("ldafwd.fragment.data", "Fragment data"),
  addressed      = ProtoField.uint64("ldafwd.exchange.addressed_session", "Addressed session", base.HEX),
  request_id     = ProtoField.uint32("ldafwd.exchange.request_id", "Request id"),
  exchange_data  = ProtoField.bytes("ldafwd.exchange.data", "Message data"),
  message        = ProtoField.uint8("ldafwd.exchange.message", "Message", base.HEX, messages),
  msg_version    = ProtoField.uint8("ldafwd.exchange.version", "Message version"),
  msg_flags      = ProtoField.uint8("ldafwd.exchange.flags", "Reply flags (bit 0: flow hashes)", base.HEX),
  msg_count      = ProtoField.uint32("ldafwd.exchange.count", "Packet identities"),
  msg_cells      = ProtoField.uint32("ldafwd.exchange.cells", "Cells per bank asked"),
  parity_count   = ProtoField.uint16("ldafwd.parity.count", "Parity fragments of the part (m)"),
  parity_length  = ProtoField.uint32("ldafwd.parity.part_length", "Part length (n)"),
  parity_shard   = ProtoField.bytes("ldafwd.parity.shard", "Parity shard"),

  reassembled_in = ProtoField.framenum("ldafwd.reassembled_in", "Reassembled in frame"),
  reassembled    = ProtoField.bytes("ldafwd.reassembled", "Reassembled data"),
  reassembled_len = ProtoField.uint32("ldafwd.reassembled.length", "Reassembled length"),
  part_frame     = ProtoField.framenum("ldafwd.reassembled.fragment", "Fragment in frame"),
}
ldafwd.fields = f

local e_malformed = ProtoExpert.new("ldafwd.malformed", "Malformed ldafwd control frame",
  expert.group.MALFORMED, expert.severity.ERROR)
local e_insecure = ProtoExpert.new("ldafwd.insecure_tag", "Insecure frame whose tag is not zero",
  expert.group.SECURITY, expert.severity.WARN)
local e_tag_len = ProtoExpert.new("ldafwd.bad_tag_length", "HMAC tag shorter than 16 bytes",
  expert.group.MALFORMED, expert.severity.ERROR)
ldafwd.experts = { e_malformed, e_insecure, e_tag_len }

local NS = Int64(1000000000)

-- nstime turns ns since the Unix epoch (an Int64) into an NSTime, exactly.
local function nstime(ns)
  local s = ns / NS
  local rem = ns - s * NS
  if rem < Int64(0) then
    s, rem = s - Int64(1), rem + NS
  end
  return NSTime.new(s:tonumber(), rem:tonumber())
end

-- Fragments by message key, filled on the first pass over the capture.
local partials = {}

function ldafwd.init()
  partials = {}
end

local function malformed(tree, pinfo, what)
  tree:add_proto_expert_info(e_malformed, what)
  pinfo.cols.info:append(" [malformed: " .. what .. "]")
end

-- gather records fragment i of n of a message under key; on the frame that
-- completes it, returns the message's bytes (a ByteArray) and the frames.
local function gather(pinfo, key, i, n, data)
  local p = partials[key]
  if p == nil or p.count ~= n then
    p = { count = n, have = 0, data = {}, frames = {} }
    partials[key] = p
  end
  if not pinfo.visited and p.data[i] == nil then
    p.data[i] = data
    p.frames[i] = pinfo.number
    p.have = p.have + 1
    if p.have == n then
      p.done_in = pinfo.number
    end
  end
  return p
end

local function show_reassembly(tvb, tree, pinfo, p, name)
  if p.done_in == nil then
    return
  end
  if p.done_in ~= pinfo.number then
    tree:add(f.reassembled_in, p.done_in):set_generated()
    return
  end
  local ba = ByteArray.new()
  for i = 0, p.count - 1 do
    ba:append(p.data[i])
  end
  local sub = tree:add(ldafwd, tvb(), string.format("Reassembled %s: %d bytes in %d fragments", name, ba:len(), p.count))
  sub:set_generated()
  sub:add(f.reassembled_len, ba:len()):set_generated()
  for i = 0, p.count - 1 do
    sub:add(f.part_frame, p.frames[i]):set_generated()
  end
  if ba:len() > 0 then
    local rtvb = ba:tvb("Reassembled " .. name)
    sub:add(f.reassembled, rtvb())
  end
  pinfo.cols.info:append(string.format(" [reassembled %d bytes]", ba:len()))
end

-- uvarint reads a minimal unsigned LEB128 varint at o: its value (a Lua
-- number: exact below 2^53) and length, or nil when it is cut short,
-- longer than 10 bytes or not minimal.
local function uvarint(buf, o)
  local v, mul, n = 0, 1, 0
  while o + n < buf:len() and n < 10 do
    local b = buf(o + n, 1):uint()
    n = n + 1
    v = v + (b % 128) * mul
    if b < 128 then
      if n > 1 and b == 0 then return nil end
      return v, n
    end
    mul = mul * 128
  end
  return nil
end

local function dissect_end(buf, tree, pinfo)
  if buf:len() < END_LEN then
    malformed(tree, pinfo, string.format("End payload is %d bytes, fewer than %d", buf:len(), END_LEN))
    return
  end
  tree:add(f.end_start, buf(0, 8))
  tree:add(f.end_end, buf(8, 8))
  tree:add(f.end_frames, buf(16, 8))
  tree:add(f.end_bytes, buf(24, 8))
  tree:add(f.end_lane, buf(32, 2))
  tree:add(f.end_start_time, buf(0, 8), nstime(buf(0, 8):int64())):set_generated()
  tree:add(f.end_duration, buf(0, 16), nstime(buf(8, 8):int64() - buf(0, 8):int64())):set_generated()
  if buf(8, 8):int64() < buf(0, 8):int64() then
    malformed(tree, pinfo, "interval end before its start")
  end
  -- Optional per-class counts: their number, then each class's frames,
  -- as uvarints filling the payload and adding up to the frame count.
  if buf:len() > END_LEN then
    local n, w = uvarint(buf, END_LEN)
    if n == nil or n == 0 or n > 1024 then
      malformed(tree, pinfo, "End class count malformed")
      return
    end
    tree:add(f.end_classes, buf(END_LEN, w), n)
    local o, sum = END_LEN + w, 0
    for m = 0, n - 1 do
      local c, cw = uvarint(buf, o)
      if c == nil then
        malformed(tree, pinfo, string.format("End count of class %d malformed", m))
        return
      end
      tree:add(f.end_class, buf(o, cw), string.format("MEC %d: %.0f frames", m, c))
      o, sum = o + cw, sum + c
    end
    if o ~= buf:len() then
      malformed(tree, pinfo, "End payload longer than its class counts")
      return
    end
    if sum ~= buf(16, 8):uint64():tonumber() then
      malformed(tree, pinfo, "End class counts do not add up to its frames")
      return
    end
  end
  pinfo.cols.info:append(string.format(" lane=%d frames=%s", buf(32, 2):uint(), tostring(buf(16, 8):uint64())))
end

local function dissect_hello(buf, tree, pinfo)
  local n = buf:len()
  if n < 27 then
    malformed(tree, pinfo, "Hello shorter than its fixed fields")
    return
  end
  tree:add(f.hello_sent_at, buf(0, 8))
  tree:add(f.hello_sent_time, buf(0, 8), nstime(buf(0, 8):int64())):set_generated()
  tree:add(f.hello_interval, buf(8, 8))
  tree:add(f.hello_length, buf(8, 8), nstime(buf(8, 8):int64())):set_generated()
  tree:add(f.hello_hash, buf(16, 8))
  tree:add(f.hello_lanes, buf(24, 2))
  local c = buf(26, 1):uint()
  local o = 27
  if o + c > n then
    malformed(tree, pinfo, "clock-source name past the payload")
    return
  end
  if c > 0 then
    tree:add(f.hello_clock, buf(o, c))
  end
  o = o + c
  if o + 2 > n then
    malformed(tree, pinfo, "no MEC count")
    return
  end
  local m = buf(o, 2):uint()
  local mt = tree:add(f.hello_mecs, buf(o, 2))
  o = o + 2
  local names = {}
  for i = 0, m - 1 do
    if o + 1 > n then
      malformed(tree, pinfo, "MEC list past the payload")
      return
    end
    local l = buf(o, 1):uint()
    if l == 0 or o + 1 + l > n then
      malformed(tree, pinfo, "bad MEC name length")
      return
    end
    mt:add(f.hello_mec, buf(o + 1, l)):append_text(string.format(" (MEC id %d)", i))
    names[i] = buf(o + 1, l):string()
    o = o + 1 + l
  end
  if o + 2 > n then
    malformed(tree, pinfo, "no part count")
    return
  end
  local p = buf(o, 2):uint()
  local pt = tree:add(f.hello_parts, buf(o, 2))
  o = o + 2
  local parts = {}
  for _ = 1, p do
    if o + 3 > n then
      malformed(tree, pinfo, "part list past the payload")
      return
    end
    local id, k = buf(o, 2):uint(), buf(o + 2, 1):uint()
    local item = pt:add(ldafwd, buf(o, 3), string.format("Part: %s/%s", names[id] or ("mec" .. id), kinds[k] or tostring(k)))
    item:add(f.part_mec, buf(o, 2))
    item:add(f.part_kind, buf(o + 2, 1))
    if id >= m or kinds[k] == nil then
      malformed(tree, pinfo, "part names an unknown MEC or kind")
    end
    parts[#parts + 1] = (names[id] or "?") .. "/" .. (kinds[k] or "?")
    o = o + 3
  end
  if o < n then
    if o + 2 > n then
      malformed(tree, pinfo, "truncated configuration length")
      return
    end
    local cl = buf(o, 2):uint()
    if cl == 0 or o + 2 + cl ~= n then
      malformed(tree, pinfo, "configuration length does not match the payload")
      return
    end
    tree:add(f.hello_config, buf(o + 2, cl))
  end
  pinfo.cols.info:append(" parts=" .. table.concat(parts, ","))
end

-- dissect_message shows the head of a Request's or Reply's message (its
-- first fragment): which message, its version and how many identities or
-- cells it names (docs/protocol.md, "Request and Reply"; docs/rda.md). What
-- does not parse is left as data: the appliance refuses it, the dissector
-- only shows it.
local function dissect_message(buf, tree, pinfo)
  local m = buf(0, 1):uint()
  if messages[m] == nil or buf:len() < 2 then
    return
  end
  tree:add(f.message, buf(0, 1))
  tree:add(f.msg_version, buf(1, 1))
  local o = 2
  if m == 0x41 and buf(1, 1):uint() >= 2 then
    if buf:len() < 3 then return end
    tree:add(f.msg_flags, buf(2, 1))
    o = 3
  end
  local n, w = uvarint(buf, o)
  if n == nil then
    return
  end
  if m == 0x46 then
    tree:add(f.msg_cells, buf(o, w), n)
    pinfo.cols.info:append(string.format(" cells request: %d cells/bank", n))
  else
    tree:add(f.msg_count, buf(o, w), n)
    pinfo.cols.info:append(string.format(" %s: %d identities", messages[m], n))
  end
end

function ldafwd.dissector(tvb, pinfo, root)
  local len = tvb:len()
  pinfo.cols.protocol = "ldafwd"
  local tree = root:add(ldafwd, tvb())
  if len < HEADER_LEN then
    malformed(tree, pinfo, string.format("%d bytes, shorter than the %d-byte header", len, HEADER_LEN))
    return len
  end
  local magic, version, typ = tvb(0, 2):uint(), tvb(2, 1):uint(), tvb(3, 1):uint()
  tree:add(f.magic, tvb(0, 2))
  tree:add(f.version, tvb(2, 1))
  if magic ~= 0x4C44 then
    malformed(tree, pinfo, string.format("magic 0x%04X, not 0x4C44", magic))
    return len
  end
  if version ~= 2 then
    malformed(tree, pinfo, "version " .. version .. ", this dissector knows 2")
    return len
  end
  tree:add(f.type, tvb(3, 1))
  local ft = tree:add(f.flags, tvb(4, 1))
  ft:add(f.insecure, tvb(4, 1))
  ft:add(f.reserved, tvb(4, 1))
  tree:add(f.kind, tvb(5, 1))
  tree:add(f.mec_id, tvb(6, 2))
  tree:add(f.session_id, tvb(8, 8))
  tree:add(f.interval, tvb(16, 8))
  tree:add(f.sequence, tvb(24, 8))
  tree:add(f.fragment_index, tvb(32, 2))
  tree:add(f.fragment_count, tvb(34, 2))
  tree:add(f.direction, tvb(36, 2))
  tree:add(f.payload_length, tvb(38, 2))

  local flags, kind, mec = tvb(4, 1):uint(), tvb(5, 1):uint(), tvb(6, 2):uint()
  local session, interval, seq = tvb(8, 8):uint64(), tvb(16, 8):uint64(), tvb(24, 8):uint64()
  local idx, cnt, plen = tvb(32, 2):uint(), tvb(34, 2):uint(), tvb(38, 2):uint()
  local name = types[typ] or ("type " .. typ)
  local dir = tvb(36, 2):uint()
  pinfo.cols.info = string.format("%s k=%s seq=%s dir=%s", name, tostring(interval), tostring(seq), directions[dir] or tostring(dir))

  -- The header rules of docs/protocol.md §2.2.
  if types[typ] == nil then
    malformed(tree, pinfo, "unknown type " .. typ)
  elseif flags > 1 then -- any bit but bit 0 (plain arithmetic: no bit library across Lua versions)
    malformed(tree, pinfo, "reserved flag set")
  elseif kinds[kind] == nil then
    malformed(tree, pinfo, "unknown kind " .. kind)
  elseif seq == UInt64(0) then
    malformed(tree, pinfo, "sequence 0")
  elseif (typ == 1 or typ == 2) and (kind ~= 0 or mec ~= 0 or idx ~= 0 or cnt ~= 1) then
    malformed(tree, pinfo, "Hello/End with kind, MEC or fragment fields set")
  elseif typ == 6 and (cnt == 0 or cnt + idx >= MAX_SHARDS) then
    malformed(tree, pinfo, "parity: count 0, or count + index ≥ 256")
  elseif typ ~= 6 and (cnt == 0 or idx >= cnt) then
    malformed(tree, pinfo, "fragment index not below count")
  end
  if len < HEADER_LEN + plen + TAG_LEN then
    if len >= HEADER_LEN + plen then
      -- The payload is whole: what is short is the tag.
      local t = tree:add(f.tag, tvb(HEADER_LEN + plen))
      t:add_proto_expert_info(e_tag_len, string.format("HMAC tag is %d bytes, not %d", len - HEADER_LEN - plen, TAG_LEN))
      pinfo.cols.info:append(string.format(" [malformed: HMAC tag of %d bytes]", len - HEADER_LEN - plen))
      return len
    end
    malformed(tree, pinfo, string.format("truncated: %d bytes, header + payload + tag need %d", len, HEADER_LEN + plen + TAG_LEN))
    return len
  end
  local pt = tree
  if plen > 0 then
    pt = tree:add(ldafwd, tvb(HEADER_LEN, plen), string.format("%s payload (%d bytes)", name, plen))
  end
  if (typ == 1 or typ == 2) and plen == 0 then
    malformed(tree, pinfo, name .. " without payload")
  elseif typ == 1 then
    dissect_hello(tvb(HEADER_LEN, plen):tvb(), pt, pinfo)
  elseif typ == 2 then
    dissect_end(tvb(HEADER_LEN, plen):tvb(), pt, pinfo)
  elseif typ == 3 then
    if plen > 0 then
      pt:add(f.fragment_data, tvb(HEADER_LEN, plen))
    end
    local part = string.format("mec%d/%s", mec, kinds[kind] or "?")
    pinfo.cols.info:append(string.format(" %s fragment %d/%d", part, idx + 1, cnt))
    if idx < cnt then
      local key = table.concat({ "F", tostring(session), tostring(interval), mec, kind }, ":")
      local data = ByteArray.new()
      if plen > 0 then
        data = tvb(HEADER_LEN, plen):bytes()
      end
      local p = gather(pinfo, key, idx, cnt, data)
      show_reassembly(tvb, tree, pinfo, p, "part " .. part)
    end
  elseif typ == 6 then
    if plen <= PARITY_HEADER_LEN then
      malformed(tree, pinfo, string.format("Parity payload of %d bytes, not more than %d", plen, PARITY_HEADER_LEN))
    else
      pt:add(f.parity_count, tvb(HEADER_LEN, 2))
      pt:add(f.parity_length, tvb(HEADER_LEN + 2, 4))
      pt:add(f.parity_shard, tvb(HEADER_LEN + PARITY_HEADER_LEN, plen - PARITY_HEADER_LEN))
      local m, n, s = tvb(HEADER_LEN, 2):uint(), tvb(HEADER_LEN + 2, 4):uint(), plen - PARITY_HEADER_LEN
      pinfo.cols.info:append(string.format(" mec%d/%s parity %d/%d of %d fragments", mec, kinds[kind] or "?", idx + 1, m, cnt))
      -- docs/protocol.md §3.5: 1 ≤ m, j < m, k + m ≤ 256, (k − 1)·S < n ≤ k·S.
      if m < 1 or idx >= m or cnt + m > MAX_SHARDS or n < 1 or n > cnt * s or n <= (cnt - 1) * s then
        malformed(tree, pinfo, "parity counts disagree with the header")
      end
    end
  elseif typ == 4 or typ == 5 then
    if plen < EXCHANGE_HEADER_LEN then
      malformed(tree, pinfo, string.format("%s payload of %d bytes, shorter than %d", name, plen, EXCHANGE_HEADER_LEN))
    else
      pt:add(f.addressed, tvb(HEADER_LEN, 8))
      pt:add(f.request_id, tvb(HEADER_LEN + 8, 4))
      if plen > EXCHANGE_HEADER_LEN then
        pt:add(f.exchange_data, tvb(HEADER_LEN + EXCHANGE_HEADER_LEN, plen - EXCHANGE_HEADER_LEN))
      end
      if idx == 0 and plen > EXCHANGE_HEADER_LEN then
        dissect_message(tvb(HEADER_LEN + EXCHANGE_HEADER_LEN, plen - EXCHANGE_HEADER_LEN):tvb(), pt, pinfo)
      end
      local id = tvb(HEADER_LEN + 8, 4):uint()
      pinfo.cols.info:append(string.format(" mec%d/%s id=%d fragment %d/%d", mec, kinds[kind] or "?", id, idx + 1, cnt))
      if idx < cnt then
        -- A retry repeats the message under new sequence numbers: the same key.
        local key = table.concat({ name, tostring(session), tostring(tvb(HEADER_LEN, 8):uint64()), id, tostring(interval), mec, kind }, ":")
        local body = ByteArray.new()
        if plen > EXCHANGE_HEADER_LEN then
          body = tvb(HEADER_LEN + EXCHANGE_HEADER_LEN, plen - EXCHANGE_HEADER_LEN):bytes()
        end
        local p = gather(pinfo, key, idx, cnt, body)
        show_reassembly(tvb, tree, pinfo, p, name:lower())
      end
    end
  end
  local tag = tree:add(f.tag, tvb(HEADER_LEN + plen, TAG_LEN))
  if flags % 2 == 1 then
    if tvb(HEADER_LEN + plen, TAG_LEN):bytes():tohex() ~= string.rep("00", TAG_LEN) then
      tag:add_proto_expert_info(e_insecure)
    else
      tag:append_text(" [insecure: zero]")
    end
  end
  if len > HEADER_LEN + plen + TAG_LEN then
    tree:add(f.trailer, tvb(HEADER_LEN + plen + TAG_LEN))
  end
  return len
end

DissectorTable.get("ethertype"):add(0x88B5, ldafwd)
