-- Wireshark dissector for MRC (Multipath Reliable Connection), wire
-- format version 2 as docs/wire.md specifies it.  Installed by
-- `make install` into Wireshark's global Lua plugin folder; or load it by
-- hand: tshark -X lua_script:tools/wireshark/mrc.lua ...
--
-- It decodes every field of data (WRITE, WRITE_IMM, SEND, SEND_IMM,
-- ATOMIC_ADD), ACK/NACK, PROBE, PROBE_REPLY and the CTRL envelope, checks
-- the header CRC (hcrc, with the TRIMMED bit excluded) and the payload CRC
-- (pcrc), and shows the uSID destination address as the nodes of the
-- path.  It registers on mrcd's port (791 by default; a fabric run on
-- RoCEv2's 4791 sets the pref, and the port is then taken over from the
-- InfiniBand dissector) and adds a heuristic so that captures on other
-- ports decode.
-- The CTRL MAC is shown, not verified: that needs the cluster key.
--
-- Written in Lua (not C) because Wireshark loads Lua plugins without a
-- build against its headers, which Debian does not ship for 4.0.

local mrc = Proto("mrc", "MRC (Multipath Reliable Connection)")

-- Lua 5.2 (Wireshark 4.0) has bit32; Lua 5.3+ (Wireshark 4.2+) has native
-- operators, which 5.2 cannot even parse, hence load().
local band, bor, bxor, rshift, bnot
if bit32 then
	band, bor, bxor, rshift, bnot = bit32.band, bit32.bor, bit32.bxor, bit32.rshift, bit32.bnot
else
	band = load("return function(a, b) return a & b end")()
	bor = load("return function(a, b) return a | b end")()
	bxor = load("return function(a, b) return a ~ b end")()
	rshift = load("return function(a, n) return (a & 0xffffffff) >> n end")()
	bnot = load("return function(a) return (~a) & 0xffffffff end")()
end

-- CRC-32C (Castagnoli, reflected 0x82F63B78), the CRC of docs/wire.md.
local crc_tab = {}
for i = 0, 255 do
	local c = i
	for _ = 1, 8 do
		if band(c, 1) ~= 0 then c = bxor(rshift(c, 1), 0x82F63B78) else c = rshift(c, 1) end
	end
	crc_tab[i] = c
end
-- crc32c over the bytes of a Lua string; mask_off: 0-based offset of a
-- byte to AND with mask_val first (the TRIMMED bit rule), or nil.
local function crc32c(s, mask_off, mask_val)
	local c = 0xFFFFFFFF
	local byte = string.byte
	for i = 1, #s do
		local b = byte(s, i)
		if mask_off and i - 1 == mask_off then b = band(b, mask_val) end
		c = bxor(crc_tab[band(bxor(c, b), 0xff)], rshift(c, 8))
	end
	return band(bnot(c), 0xFFFFFFFF)
end

local VERSION = 2
local HDR = { data = 68, ack = 76, probe = 44, ctrl = 40 }
local F_TRIMMED, F_ENC, F_XACK = 0x0008, 0x0040, 0x0080
local XACK_LEN = 24   -- the cross-QP ACK extension after a data header

local opcodes = {
	[1] = "WRITE", [2] = "WRITE_IMM", [3] = "SEND", [4] = "SEND_IMM", [5] = "ATOMIC_ADD",
	[16] = "ACK", [32] = "PROBE", [33] = "PROBE_REPLY", [48] = "CTRL",
}
local nacks = { [0] = "NONE", [1] = "TRIMMED", [2] = "OOW", [3] = "ACCESS", [4] = "RNR", [5] = "NOQP" }
local ctrl_types = { [1] = "REQ", [2] = "REP", [3] = "REJ", [4] = "PLANES" }
local crc_status = { [0] = "Bad", [1] = "Good", [2] = "Unverified" }

local f = {
	version = ProtoField.uint8("mrc.version", "Version"),
	opcode = ProtoField.uint8("mrc.opcode", "Opcode", base.DEC, opcodes),
	flags = ProtoField.uint16("mrc.flags", "Flags", base.HEX),
	f_first = ProtoField.bool("mrc.flags.first", "FIRST", 16, nil, 0x0001),
	f_last = ProtoField.bool("mrc.flags.last", "LAST", 16, nil, 0x0002),
	f_retx = ProtoField.bool("mrc.flags.retx", "RETX", 16, nil, 0x0004),
	f_trimmed = ProtoField.bool("mrc.flags.trimmed", "TRIMMED", 16, nil, 0x0008),
	f_pb_ack = ProtoField.bool("mrc.flags.pb_ack", "PB_ACK", 16, nil, 0x0010),
	f_pb_ecn = ProtoField.bool("mrc.flags.pb_ecn", "PB_ECN", 16, nil, 0x0020),
	f_enc = ProtoField.bool("mrc.flags.enc", "ENC", 16, nil, 0x0040),
	f_xack = ProtoField.bool("mrc.flags.xack", "XACK", 16, nil, 0x0080),
	x_dqpn = ProtoField.uint32("mrc.xack.dqpn", "Cross-QP ACK: QP acknowledged"),
	x_cum_psn = ProtoField.uint32("mrc.xack.cum_psn", "Cross-QP ACK: cumulative PSN"),
	x_sack = ProtoField.uint16("mrc.xack.sack", "Cross-QP ACK: SACK", base.HEX),
	x_hold = ProtoField.uint16("mrc.xack.hold", "Cross-QP ACK: hold (units of 64 ns)"),
	x_token = ProtoField.uint64("mrc.xack.token", "Cross-QP ACK: token of that QP", base.HEX),
	x_crc = ProtoField.uint32("mrc.xack.crc", "Cross-QP ACK: CRC", base.HEX),
	f_ecn = ProtoField.bool("mrc.flags.ecn", "ECN", 16, nil, 0x0001),
	dqpn = ProtoField.uint32("mrc.dqpn", "Destination QP"),
	psn = ProtoField.uint32("mrc.psn", "PSN"),
	ev = ProtoField.uint16("mrc.ev", "EV (path)"),
	plen = ProtoField.uint16("mrc.plen", "Payload length"),
	msn = ProtoField.uint32("mrc.msn", "MSN"),
	rkey = ProtoField.uint32("mrc.rkey", "Remote key", base.HEX),
	ssn = ProtoField.uint32("mrc.ssn", "Send sequence number"),
	off = ProtoField.uint64("mrc.off", "Offset"),
	ts = ProtoField.uint64("mrc.ts", "Timestamp (ns)"),
	mlen = ProtoField.uint32("mrc.mlen", "Message length"),
	imm = ProtoField.uint32("mrc.imm", "Immediate", base.HEX),
	token = ProtoField.uint64("mrc.token", "Token", base.HEX),
	pb_cum_psn = ProtoField.uint32("mrc.pb.cum_psn", "Piggybacked cumulative PSN"),
	pb_sack = ProtoField.uint16("mrc.pb.sack", "Piggybacked SACK", base.HEX),
	pb_hold = ProtoField.uint16("mrc.pb.hold", "Piggybacked ACK hold (units of 64 ns)"),
	hcrc = ProtoField.uint32("mrc.hcrc", "Header CRC", base.HEX),
	hcrc_status = ProtoField.uint8("mrc.hcrc.status", "Header CRC status", base.DEC, crc_status),
	payload = ProtoField.bytes("mrc.payload", "Payload"),
	addend = ProtoField.uint64("mrc.addend", "Atomic addend"),
	pcrc = ProtoField.uint32("mrc.pcrc", "Payload CRC", base.HEX),
	pcrc_status = ProtoField.uint8("mrc.pcrc.status", "Payload CRC status", base.DEC, crc_status),
	enc_seq = ProtoField.uint64("mrc.enc.seq", "AEAD sequence number"),
	enc_tag = ProtoField.bytes("mrc.enc.tag", "AEAD tag"),
	ack_cum_psn = ProtoField.uint32("mrc.ack.cum_psn", "Cumulative PSN"),
	ack_nack = ProtoField.uint8("mrc.ack.nack", "NACK reason", base.DEC, nacks),
	ack_rnr = ProtoField.uint8("mrc.ack.rnr_timer", "RNR timer code"),
	ack_trig_psn = ProtoField.uint32("mrc.ack.trig_psn", "Triggering PSN"),
	ack_sack_base = ProtoField.uint32("mrc.ack.sack_base", "SACK base PSN"),
	ts_echo = ProtoField.uint64("mrc.ts_echo", "Timestamp echo (ns)"),
	ack_sack = ProtoField.bytes("mrc.ack.sack", "SACK bitmap"),
	ack_sacked = ProtoField.uint16("mrc.ack.sacked", "PSNs selectively acknowledged"),
	rsvd = ProtoField.uint32("mrc.rsvd", "Reserved", base.HEX),
	probe_seq = ProtoField.uint32("mrc.probe.seq", "Probe sequence number"),
	ctrl_src = ProtoField.uint32("mrc.ctrl.src_host", "Source host index"),
	ctrl_dst = ProtoField.uint32("mrc.ctrl.dst_host", "Destination host index"),
	ctrl_blen = ProtoField.uint16("mrc.ctrl.blen", "Body length"),
	ctrl_stamp = ProtoField.uint64("mrc.ctrl.stamp", "Anti-replay stamp (ns since epoch)"),
	ctrl_flags = ProtoField.uint16("mrc.ctrl.flags", "Flags (1: CHALLENGE)", base.HEX),
	ctrl_src_epoch = ProtoField.uint64("mrc.ctrl.src_epoch", "Sender's boot epoch", base.HEX),
	ctrl_dst_tag = ProtoField.uint64("mrc.ctrl.dst_tag", "Receiver's cookie (CHALLENGE: the epoch challenged)", base.HEX),
	ctrl_cookie = ProtoField.uint64("mrc.ctrl.cookie", "CHALLENGE: the cookie issued", base.HEX),
	ctrl_type = ProtoField.uint8("mrc.ctrl.type", "Type", base.DEC, ctrl_types),
	ctrl_sid = ProtoField.uint32("mrc.ctrl.sid", "Service id"),
	ctrl_id = ProtoField.uint64("mrc.ctrl.id", "Request id", base.HEX),
	ctrl_qpn = ProtoField.uint32("mrc.ctrl.qpn", "QP"),
	ctrl_psn = ProtoField.uint32("mrc.ctrl.psn", "First PSN"),
	ctrl_err = ProtoField.int32("mrc.ctrl.err", "Error (negative errno)"),
	ctrl_arg = ProtoField.uint32("mrc.ctrl.arg", "Argument", base.HEX),
	ctrl_nonce = ProtoField.bytes("mrc.ctrl.nonce", "Connection nonce"),
	ctrl_window = ProtoField.uint32("mrc.ctrl.window", "Window (packets)"),
	ctrl_mtu = ProtoField.uint32("mrc.ctrl.mtu", "MTU (payload bytes)"),
	ctrl_body = ProtoField.bytes("mrc.ctrl.body", "Body"),
	ctrl_neps = ProtoField.uint8("mrc.ctrl.neps", "Endpoints (planes)"),
	ctrl_ep = ProtoField.uint32("mrc.ctrl.ep", "Endpoint (UD QP number) of a plane"),
	ctrl_mac = ProtoField.bytes("mrc.ctrl.mac", "MAC (BLAKE2b-128, not verified)"),
	route = ProtoField.string("mrc.route", "uSID route"),
	route_plane = ProtoField.uint8("mrc.route.plane", "Plane"),
	route_leaf = ProtoField.uint16("mrc.route.leaf", "Leaf"),
	route_spine = ProtoField.uint16("mrc.route.spine", "Spine"),
	route_host = ProtoField.uint16("mrc.route.host", "Destination host"),
	src_host = ProtoField.uint16("mrc.src_host", "Source host"),
}
local fl = {}
for _, v in pairs(f) do fl[#fl + 1] = v end
mrc.fields = fl

local ex = {
	bad_version = ProtoExpert.new("mrc.bad_version", "Version is not 2", expert.group.MALFORMED, expert.severity.ERROR),
	bad_opcode = ProtoExpert.new("mrc.bad_opcode", "Unknown opcode", expert.group.MALFORMED, expert.severity.ERROR),
	truncated = ProtoExpert.new("mrc.truncated", "Shorter than the fixed header", expert.group.MALFORMED, expert.severity.ERROR),
	bad_hcrc = ProtoExpert.new("mrc.bad_hcrc", "Header CRC mismatch", expert.group.CHECKSUM, expert.severity.ERROR),
	bad_pcrc = ProtoExpert.new("mrc.bad_pcrc", "Payload CRC mismatch", expert.group.CHECKSUM, expert.severity.ERROR),
	bad_length = ProtoExpert.new("mrc.bad_length", "Datagram length disagrees with the header", expert.group.MALFORMED, expert.severity.ERROR),
	bad_field = ProtoExpert.new("mrc.bad_field", "Field out of range or reserved bits set", expert.group.MALFORMED, expert.severity.ERROR),
	trimmed = ProtoExpert.new("mrc.trimmed", "Trimmed by a switch (congestion)", expert.group.SEQUENCE, expert.severity.NOTE),
	retx = ProtoExpert.new("mrc.retx", "Retransmission", expert.group.SEQUENCE, expert.severity.NOTE),
	nack = ProtoExpert.new("mrc.nack", "NACK", expert.group.RESPONSE_CODE, expert.severity.WARN),
}
mrc.experts = { ex.bad_version, ex.bad_opcode, ex.truncated, ex.bad_hcrc, ex.bad_pcrc,
	ex.bad_length, ex.bad_field, ex.trimmed, ex.retx, ex.nack }

mrc.prefs.port = Pref.uint("UDP port", 791, "MRC's UDP port (mrcd's port setting; 791 by default)")
mrc.prefs.block_bits = Pref.uint("uSID block length (bits)", 32,
	"Length of the SRv6 locator block before the first uSID (16, 32, 48 or 64)")

local ip6_src = Field.new("ipv6.src")
local ip6_dst = Field.new("ipv6.dst")

-- The generated uSID plan (docs/fabric.md, "Addressing plan"): leaf l of
-- plane p is 0x1000 + p*0x100 + l, spine s of plane p 0x2000 + p*0x100 + s,
-- host h 0x8000 + h.  Files may choose other uSIDs: those are shown raw.
local function usid_name(u)
	if u >= 0x8000 then return "h" .. (u - 0x8000), "host", nil, u - 0x8000 end
	if u >= 0x1000 and u < 0x2000 then
		return string.format("p%dl%d", rshift(u - 0x1000, 8), band(u, 0xff)), "leaf", rshift(u - 0x1000, 8), band(u, 0xff)
	end
	if u >= 0x2000 and u < 0x3000 then
		return string.format("p%ds%d", rshift(u - 0x2000, 8), band(u, 0xff)), "spine", rshift(u - 0x2000, 8), band(u, 0xff)
	end
	return string.format("0x%04x", u), nil
end

local function ip6_bytes(fi)
	if not fi then return nil end
	local r = fi.range
	if not r or r:len() ~= 16 then return nil end
	return r:bytes():raw()
end

local function add_route(tree)
	local bb = math.floor(mrc.prefs.block_bits / 8)
	local dst = ip6_bytes(ip6_dst())
	if dst then
		local names, plane, spine, leaf, host = {}, nil, nil, nil, nil
		for i = bb + 1, 15, 2 do
			local u = string.byte(dst, i) * 256 + string.byte(dst, i + 1)
			if u == 0 then break end
			local n, kind, a, b = usid_name(u)
			names[#names + 1] = n
			if kind == "leaf" then plane = a; leaf = leaf or b
			elseif kind == "spine" then plane = a; spine = b
			elseif kind == "host" then host = b end
		end
		if #names > 0 then
			local st = tree:add(f.route, table.concat(names, " > "))
			if plane then st:add(f.route_plane, plane) end
			if leaf then st:add(f.route_leaf, leaf) end
			if spine then st:add(f.route_spine, spine) end
			if host then st:add(f.route_host, host) end
		end
	end
	local src = ip6_bytes(ip6_src())
	if src and bb + 2 <= 16 then
		local u = string.byte(src, bb + 1) * 256 + string.byte(src, bb + 2)
		if u >= 0x8000 then tree:add(f.src_host, u - 0x8000) end
	end
end

-- The fixed header length of an opcode, nil if unknown.
local function hdr_len(op)
	if op >= 1 and op <= 5 then return HDR.data end
	if op == 16 then return HDR.ack end
	if op == 32 or op == 33 then return HDR.probe end
	if op == 48 then return HDR.ctrl end
	return nil
end

-- hcrc of the header at tvb (length hl): nil if it does not match.
local function hcrc_ok(tvb, hl)
	local raw = tvb:range(0, hl - 4):bytes():raw()
	return crc32c(raw, 3, band(0xff, bnot(F_TRIMMED))) == tvb:range(hl - 4, 4):uint()
end

local function add_hcrc(tree, tvb, hl)
	local ok = hcrc_ok(tvb, hl)
	tree:add(f.hcrc, tvb:range(hl - 4, 4))
	local st = tree:add(f.hcrc_status, ok and 1 or 0):set_generated()
	if not ok then st:add_proto_expert_info(ex.bad_hcrc) end
	return ok
end

local function dissect_data(tvb, pinfo, tree, op, flags)
	local len = tvb:len()
	tree:add(f.dqpn, tvb:range(4, 4))
	tree:add(f.psn, tvb:range(8, 4))
	tree:add(f.ev, tvb:range(12, 2))
	local plen = tvb:range(14, 2):uint()
	tree:add(f.plen, tvb:range(14, 2))
	tree:add(f.msn, tvb:range(16, 4))
	if op == 3 or op == 4 then tree:add(f.ssn, tvb:range(20, 4)) else tree:add(f.rkey, tvb:range(20, 4)) end
	tree:add(f.off, tvb:range(24, 8))
	tree:add(f.ts, tvb:range(32, 8))
	tree:add(f.mlen, tvb:range(40, 4))
	tree:add(f.imm, tvb:range(44, 4))
	tree:add(f.token, tvb:range(48, 8))
	local pb = tree
	if band(flags, 0x0010) ~= 0 then pb = tree:add(mrc, tvb:range(56, 8), "Piggybacked ACK") end
	pb:add(f.pb_cum_psn, tvb:range(56, 4))
	pb:add(f.pb_sack, tvb:range(60, 2))
	pb:add(f.pb_hold, tvb:range(62, 2))
	add_hcrc(tree, tvb, HDR.data)
	local trimmed = band(flags, F_TRIMMED) ~= 0
	local enc = band(flags, F_ENC) ~= 0
	local tlen = enc and 28 or 4
	if band(flags, bnot(0x00ff)) ~= 0 or plen > 9000 then tree:add_proto_expert_info(ex.bad_field) end
	if band(flags, 0x0004) ~= 0 then tree:add_proto_expert_info(ex.retx) end
	local info = string.format("%s qp=%d psn=%u ev=%d len=%d", opcodes[op], tvb:range(4, 4):uint(),
		tvb:range(8, 4):uint(), tvb:range(12, 2):uint(), plen)
	if trimmed then
		tree:add_proto_expert_info(ex.trimmed)
		if len ~= HDR.data or plen == 0 then tree:add_proto_expert_info(ex.bad_length) end
		return info .. " [TRIMMED]"
	end
	local hl = HDR.data
	if band(flags, F_XACK) ~= 0 and len >= HDR.data + XACK_LEN then
		local x = tree:add(mrc, tvb:range(HDR.data, XACK_LEN), "Cross-QP ACK")
		x:add(f.x_dqpn, tvb:range(HDR.data, 4))
		x:add(f.x_cum_psn, tvb:range(HDR.data + 4, 4))
		x:add(f.x_sack, tvb:range(HDR.data + 8, 2))
		x:add(f.x_hold, tvb:range(HDR.data + 10, 2))
		x:add(f.x_token, tvb:range(HDR.data + 12, 8))
		x:add(f.x_crc, tvb:range(HDR.data + 20, 4))
		if crc32c(tvb:range(HDR.data, 20):bytes():raw()) ~= tvb:range(HDR.data + 20, 4):uint() then
			x:add_proto_expert_info(ex.bad_hcrc)
		end
		hl = HDR.data + XACK_LEN
		info = info .. string.format(" [XACK qp=%d]", tvb:range(HDR.data, 4):uint())
	end
	local want = hl + plen + (plen > 0 and tlen or 0)
	if len ~= want then
		tree:add_proto_expert_info(ex.bad_length, string.format("Length %d, header says %d", len, want))
		return info .. " [bad length]"
	end
	if plen == 0 then return info end
	local pr = tvb:range(hl, plen)
	if op == 5 and not enc then tree:add(f.addend, pr) else tree:add(f.payload, pr) end
	local tr = hl + plen
	local covered
	if enc then
		tree:add(f.enc_seq, tvb:range(tr, 8))
		tree:add(f.enc_tag, tvb:range(tr + 8, 16))
		covered = tvb:range(hl, plen + 24):bytes():raw()
		tr = tr + 24
		info = info .. " [ENC]"
	else
		covered = pr:bytes():raw()
	end
	tree:add(f.pcrc, tvb:range(tr, 4))
	local ok = crc32c(covered) == tvb:range(tr, 4):uint()
	local st = tree:add(f.pcrc_status, ok and 1 or 0):set_generated()
	if not ok then st:add_proto_expert_info(ex.bad_pcrc) end
	return info
end

local function dissect_ack(tvb, pinfo, tree, flags)
	tree:add(f.dqpn, tvb:range(4, 4))
	tree:add(f.ack_cum_psn, tvb:range(8, 4))
	tree:add(f.ev, tvb:range(12, 2))
	local nack = tvb:range(14, 1):uint()
	local nt = tree:add(f.ack_nack, tvb:range(14, 1))
	if nack ~= 0 then nt:add_proto_expert_info(ex.nack, "NACK " .. (nacks[nack] or tostring(nack))) end
	tree:add(f.ack_rnr, tvb:range(15, 1))
	tree:add(f.ack_trig_psn, tvb:range(16, 4))
	tree:add(f.ack_sack_base, tvb:range(20, 4))
	tree:add(f.ts_echo, tvb:range(24, 8))
	tree:add(f.token, tvb:range(32, 8))
	local sr = tvb:range(40, 32)
	local st = tree:add(f.ack_sack, sr)
	local n, raw = 0, sr:bytes():raw()
	for i = 1, 32 do
		local b = string.byte(raw, i)
		while b ~= 0 do n = n + band(b, 1); b = rshift(b, 1) end
	end
	st:add(f.ack_sacked, n):set_generated()
	add_hcrc(tree, tvb, HDR.ack)
	if tvb:len() ~= HDR.ack then tree:add_proto_expert_info(ex.bad_length) end
	if band(flags, bnot(0x0001)) ~= 0 or nack > 5 then tree:add_proto_expert_info(ex.bad_field) end
	local what = nack ~= 0 and ("NACK " .. (nacks[nack] or "?")) or "ACK"
	return string.format("%s qp=%d cum=%u trig=%u ev=%d sacked=%d", what, tvb:range(4, 4):uint(),
		tvb:range(8, 4):uint(), tvb:range(16, 4):uint(), tvb:range(12, 2):uint(), n)
end

local function dissect_probe(tvb, pinfo, tree, op, flags)
	tree:add(f.rsvd, tvb:range(4, 4))
	tree:add(f.probe_seq, tvb:range(8, 4))
	tree:add(f.ev, tvb:range(12, 2))
	tree:add(f.rsvd, tvb:range(14, 2))
	tree:add(f.ts, tvb:range(16, 8))
	tree:add(f.ts_echo, tvb:range(24, 8))
	tree:add(f.token, tvb:range(32, 8))
	add_hcrc(tree, tvb, HDR.probe)
	if tvb:len() ~= HDR.probe then tree:add_proto_expert_info(ex.bad_length) end
	if flags ~= 0 or tvb:range(4, 4):uint() ~= 0 or tvb:range(14, 2):uint() ~= 0 then
		tree:add_proto_expert_info(ex.bad_field)
	end
	return string.format("%s seq=%u ev=%d", opcodes[op], tvb:range(8, 4):uint(), tvb:range(12, 2):uint())
end

local function dissect_ctrl(tvb, pinfo, tree)
	local H = HDR.ctrl
	tree:add(f.ctrl_flags, tvb:range(2, 2))
	tree:add(f.ctrl_src, tvb:range(4, 4))
	tree:add(f.ctrl_dst, tvb:range(8, 4))
	local blen = tvb:range(12, 2):uint()
	tree:add(f.ctrl_blen, tvb:range(12, 2))
	tree:add(f.rsvd, tvb:range(14, 2))
	tree:add(f.ctrl_stamp, tvb:range(16, 8))
	tree:add(f.ctrl_src_epoch, tvb:range(24, 8))
	tree:add(f.ctrl_dst_tag, tvb:range(32, 8))
	local info = string.format("CTRL %d -> %d", tvb:range(4, 4):uint(), tvb:range(8, 4):uint())
	if tvb:len() ~= H + 16 + blen then
		tree:add_proto_expert_info(ex.bad_length)
		return info .. " [bad length]"
	end
	local br = tvb:range(H, blen)
	local challenge = tvb:range(2, 2):uint() == 1
	-- 56 bytes, or 56 and the endpoint block of a verbs daemon (docs/wire.md)
	if challenge and blen == 8 then
		tree:add(f.ctrl_cookie, br)
		info = info .. " CHALLENGE"
	elseif blen == 56 or (blen >= 60 and blen == 60 + 4 * tvb:range(H + 56, 1):uint()) then
		local b = tree:add(f.ctrl_body, br)
		local ty = tvb:range(H, 1):uint()
		b:add(f.ctrl_type, tvb:range(H, 1))
		b:add(f.ctrl_sid, tvb:range(H + 4, 4))
		b:add(f.ctrl_id, tvb:range(H + 8, 8))
		b:add(f.ctrl_qpn, tvb:range(H + 16, 4))
		b:add(f.ctrl_psn, tvb:range(H + 20, 4))
		b:add(f.ctrl_err, tvb:range(H + 24, 4))
		b:add(f.ctrl_arg, tvb:range(H + 28, 4))
		b:add(f.ctrl_nonce, tvb:range(H + 32, 16))
		b:add(f.ctrl_window, tvb:range(H + 48, 4))
		b:add(f.ctrl_mtu, tvb:range(H + 52, 4))
		info = string.format("%s %s sid=%u qp=%u", info, ctrl_types[ty] or "?", tvb:range(H + 4, 4):uint(),
			tvb:range(H + 16, 4):uint())
		if blen > 56 then
			b:add(f.ctrl_neps, tvb:range(H + 56, 1))
			for i = 0, tvb:range(H + 56, 1):uint() - 1 do
				b:add(f.ctrl_ep, tvb:range(H + 60 + 4 * i, 4))
			end
			info = info .. " +endpoints"
		end
	elseif blen > 0 then
		tree:add(f.ctrl_body, br)
	end
	tree:add(f.ctrl_mac, tvb:range(H + blen, 16))
	return info
end

-- Cheap structural check shared by the port dissector and the heuristic:
-- opcode and fixed header length, or nil.
local function classify(tvb)
	if tvb:len() < 4 then return nil end
	local op = tvb:range(1, 1):uint()
	local hl = hdr_len(op)
	if not hl or tvb:len() < hl then return nil end
	return op, hl
end

function mrc.dissector(tvb, pinfo, tree)
	local len = tvb:len()
	pinfo.cols.protocol = "MRC"
	local t = tree:add(mrc, tvb:range(0, len))
	if len < 4 then
		t:add_proto_expert_info(ex.truncated)
		return len
	end
	t:add(f.version, tvb:range(0, 1))
	local vt = tvb:range(0, 1):uint()
	local op = tvb:range(1, 1):uint()
	t:add(f.opcode, tvb:range(1, 1))
	local flags = tvb:range(2, 2):uint()
	local ft = t:add(f.flags, tvb:range(2, 2))
	if vt ~= VERSION then
		t:add_proto_expert_info(ex.bad_version)
		pinfo.cols.info = "MRC version " .. vt
		return len
	end
	local hl = hdr_len(op)
	if not hl then
		t:add_proto_expert_info(ex.bad_opcode)
		pinfo.cols.info = "MRC unknown opcode " .. op
		return len
	end
	if op <= 5 then
		for _, k in ipairs({ "f_first", "f_last", "f_retx", "f_trimmed", "f_pb_ack", "f_pb_ecn", "f_enc", "f_xack" }) do
			ft:add(f[k], tvb:range(2, 2))
		end
	elseif op == 16 then
		ft:add(f.f_ecn, tvb:range(2, 2))
	end
	add_route(t)
	if len < hl then
		t:add_proto_expert_info(ex.truncated)
		pinfo.cols.info = "MRC " .. opcodes[op] .. " [truncated]"
		return len
	end
	local info
	if op <= 5 then info = dissect_data(tvb, pinfo, t, op, flags)
	elseif op == 16 then info = dissect_ack(tvb, pinfo, t, flags)
	elseif op == 48 then info = dissect_ctrl(tvb, pinfo, t)
	else info = dissect_probe(tvb, pinfo, t, op, flags) end
	pinfo.cols.info = info
	return len
end

-- Heuristic: version 2, a known opcode, the fixed header present and, for
-- everything but CTRL (which has a MAC, not a CRC), a matching hcrc.
local function heuristic(tvb, pinfo, tree)
	if tvb:len() < 4 or tvb:range(0, 1):uint() ~= VERSION then return false end
	local op, hl = classify(tvb)
	if not op then return false end
	if op == 48 then
		if tvb:len() ~= 40 + tvb:range(12, 2):uint() then return false end
	elseif not hcrc_ok(tvb, hl) then
		return false
	end
	mrc.dissector(tvb, pinfo, tree)
	return true
end

local registered_port
function mrc.prefs_changed()
	local t = DissectorTable.get("udp.port")
	if registered_port then t:remove(registered_port, mrc) end
	registered_port = mrc.prefs.port
	t:add(registered_port, mrc)
end

DissectorTable.get("udp.port"):add(mrc.prefs.port, mrc)
registered_port = mrc.prefs.port
mrc:register_heuristic("udp", heuristic)
