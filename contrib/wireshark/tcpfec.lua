-- Wireshark / tshark dissector for tcpfec (docs/reference/wire.md, docs/design/network.md).
--
-- Two protocols:
--   tcpfec      the engine's packet: 40-byte header, options (SACK, MSS, FEC group and
--               block, repair, feedback, transfer, transmission number, repair window),
--               payload. The simulator's captures (`tcpfec sim --pcap`) carry it bare,
--               on UDP port 7979.
--   tcpfec_env  the UDP envelope of the real driver: Initial, Retry, Handshake, Reject
--               and Data (the sealed body is shown as bytes; with --insecure it is an
--               engine packet, decoded when the preference says so).
--
-- Use: wireshark -X lua_script:contrib/wireshark/tcpfec.lua capture.pcapng
--      (or copy the file into ~/.local/lib/wireshark/plugins/).

local engine = Proto("tcpfec", "tcpfec engine packet")
local env = Proto("tcpfec_env", "tcpfec UDP envelope")

local types = { [0] = "segment", [1] = "repair" }
local f = engine.fields
f.version = ProtoField.uint8("tcpfec.version", "Version")
f.type = ProtoField.uint8("tcpfec.type", "Type", base.DEC, types)
f.flags = ProtoField.uint16("tcpfec.flags", "Flags", base.HEX)
f.syn = ProtoField.bool("tcpfec.flags.syn", "SYN", 16, nil, 0x0001)
f.ack_flag = ProtoField.bool("tcpfec.flags.ack", "ACK", 16, nil, 0x0002)
f.fin = ProtoField.bool("tcpfec.flags.fin", "FIN", 16, nil, 0x0004)
f.rst = ProtoField.bool("tcpfec.flags.rst", "RST", 16, nil, 0x0008)
f.ece = ProtoField.bool("tcpfec.flags.ece", "ECE", 16, nil, 0x0010)
f.cwr = ProtoField.bool("tcpfec.flags.cwr", "CWR", 16, nil, 0x0020)
f.sack_ok = ProtoField.bool("tcpfec.flags.sack_permitted", "SACK permitted", 16, nil, 0x0040)
f.conn_id = ProtoField.uint32("tcpfec.conn_id", "Connection id")
f.seg = ProtoField.uint64("tcpfec.seg", "Segment number")
f.ack = ProtoField.uint64("tcpfec.ack", "Cumulative ACK")
f.window = ProtoField.uint32("tcpfec.window", "Receive window")
f.ts_val = ProtoField.uint32("tcpfec.ts_val", "Timestamp value (us)")
f.ts_ecr = ProtoField.uint32("tcpfec.ts_ecr", "Timestamp echo (us)")
f.payload_len = ProtoField.uint16("tcpfec.payload_len", "Payload length")
f.options_len = ProtoField.uint8("tcpfec.options_len", "Options length")
f.option = ProtoField.uint8("tcpfec.option", "Option", base.DEC, {
    [1] = "SACK", [2] = "MSS", [3] = "FEC group", [4] = "repair", [5] = "FEC feedback",
    [6] = "transfer", [7] = "transmission number", [8] = "FEC block", [9] = "repair window",
})
f.sack_start = ProtoField.uint64("tcpfec.sack.start", "SACK start")
f.sack_end = ProtoField.uint64("tcpfec.sack.end", "SACK end")
f.mss = ProtoField.uint16("tcpfec.mss", "MSS")
f.group_first = ProtoField.uint64("tcpfec.group.first", "Group first member")
f.group_count = ProtoField.uint16("tcpfec.group.count", "Group members")
f.group_stride = ProtoField.uint16("tcpfec.group.stride", "Group stride")
f.group_repairs = ProtoField.uint8("tcpfec.group.repairs", "Group repairs (M)")
f.group_rexmit = ProtoField.uint32("tcpfec.group.retransmission", "Retransmission group")
f.block_index = ProtoField.uint8("tcpfec.block.index", "Index in block")
f.block_count = ProtoField.uint8("tcpfec.block.count", "Block members (K)")
f.block_repairs = ProtoField.uint8("tcpfec.block.repairs", "Block repairs (M)")
f.repair_len_xor = ProtoField.uint16("tcpfec.repair.len_xor", "Repair length XOR")
f.repair_index = ProtoField.uint8("tcpfec.repair.index", "Repair index")
f.repair_total = ProtoField.uint8("tcpfec.repair.total", "Repairs in group")
f.fb_recovered = ProtoField.uint32("tcpfec.feedback.recovered", "Segments rebuilt")
f.fb_failed = ProtoField.uint32("tcpfec.feedback.failed", "Groups failed")
f.fb_repairs_lost = ProtoField.uint32("tcpfec.feedback.repairs_lost", "Repairs lost")
f.fb_received = ProtoField.uint32("tcpfec.feedback.received", "Packets received")
f.fb_lost = ProtoField.uint32("tcpfec.feedback.lost", "Channel losses")
f.fb_runs = ProtoField.uint32("tcpfec.feedback.runs", "Channel loss runs")
f.fb_cong_lost = ProtoField.uint32("tcpfec.feedback.congestion_lost", "Congestion losses")
f.fb_cong_recv = ProtoField.uint32("tcpfec.feedback.congestion_received", "Received at a full queue")
f.transfer_id = ProtoField.uint32("tcpfec.transfer.id", "Transfer id")
f.transfer_oti = ProtoField.bytes("tcpfec.transfer.oti", "RaptorQ OTI")
f.number = ProtoField.uint32("tcpfec.number", "Transmission number")
f.window_count = ProtoField.uint16("tcpfec.window_repair.count", "Repair window segments")
f.window_key = ProtoField.uint16("tcpfec.window_repair.key", "Repair window key")
f.payload = ProtoField.bytes("tcpfec.payload", "Payload")

-- Decodes one engine packet in `tvb` into `tree`; returns the bytes used, or 0.
local function dissect_engine(tvb, pinfo, tree)
    if tvb:len() < 40 or tvb(0, 1):uint() ~= 1 then
        return 0
    end
    local plen = tvb(36, 2):uint()
    local olen = tvb(38, 1):uint()
    local t = tree:add(engine, tvb(0, math.min(tvb:len(), 40 + olen + plen)))
    t:add(f.version, tvb(0, 1))
    t:add(f.type, tvb(1, 1))
    local ft = t:add(f.flags, tvb(2, 2))
    for _, b in ipairs({ f.syn, f.ack_flag, f.fin, f.rst, f.ece, f.cwr, f.sack_ok }) do
        ft:add(b, tvb(2, 2))
    end
    t:add(f.conn_id, tvb(4, 4))
    t:add(f.seg, tvb(8, 8))
    t:add(f.ack, tvb(16, 8))
    t:add(f.window, tvb(24, 4))
    t:add(f.ts_val, tvb(28, 4))
    t:add(f.ts_ecr, tvb(32, 4))
    t:add(f.payload_len, tvb(36, 2))
    t:add(f.options_len, tvb(38, 1))
    local off, stop = 40, math.min(40 + olen, tvb:len())
    while off + 2 <= stop do
        local kind, len = tvb(off, 1):uint(), tvb(off + 1, 1):uint()
        if off + 2 + len > stop then
            break
        end
        local o = t:add(f.option, tvb(off, 1))
        local v = off + 2
        if kind == 1 then
            for i = 0, len / 16 - 1 do
                o:add(f.sack_start, tvb(v + 16 * i, 8))
                o:add(f.sack_end, tvb(v + 16 * i + 8, 8))
            end
        elseif kind == 2 and len == 2 then
            o:add(f.mss, tvb(v, 2))
        elseif kind == 3 and len >= 13 then
            o:add(f.group_first, tvb(v, 8))
            o:add(f.group_count, tvb(v + 8, 2))
            o:add(f.group_stride, tvb(v + 10, 2))
            o:add(f.group_repairs, tvb(v + 12, 1))
            if len == 17 then
                o:add(f.group_rexmit, tvb(v + 13, 4))
            end
        elseif kind == 4 and len == 4 then
            o:add(f.repair_len_xor, tvb(v, 2))
            o:add(f.repair_index, tvb(v + 2, 1))
            o:add(f.repair_total, tvb(v + 3, 1))
        elseif kind == 5 and len >= 16 then
            local fb = { f.fb_recovered, f.fb_failed, f.fb_repairs_lost, f.fb_received,
                f.fb_lost, f.fb_runs, f.fb_cong_lost, f.fb_cong_recv }
            for i = 0, len / 4 - 1 do
                o:add(fb[i + 1], tvb(v + 4 * i, 4))
            end
        elseif kind == 6 and len == 16 then
            o:add(f.transfer_id, tvb(v, 4))
            o:add(f.transfer_oti, tvb(v + 4, 12))
        elseif kind == 7 and len == 4 then
            o:add(f.number, tvb(v, 4))
        elseif kind == 8 and len == 3 then
            o:add(f.block_index, tvb(v, 1))
            o:add(f.block_count, tvb(v + 1, 1))
            o:add(f.block_repairs, tvb(v + 2, 1))
        elseif kind == 9 and len == 4 then
            o:add(f.window_count, tvb(v, 2))
            o:add(f.window_key, tvb(v + 2, 2))
        end
        off = v + len
    end
    if plen > 0 and 40 + olen + plen <= tvb:len() then
        t:add(f.payload, tvb(40 + olen, plen))
    end
    local flags = tvb(2, 2):uint()
    local kind = tvb(1, 1):uint() == 1 and "repair" or (plen > 0 and "data")
        or (bit.band(flags, 1) ~= 0 and "syn") or (bit.band(flags, 4) ~= 0 and "fin") or "ack"
    pinfo.cols.protocol = "tcpfec"
    pinfo.cols.info = string.format("%s seg=%s ack=%s len=%d", kind,
        tostring(tvb(8, 8):uint64()), tostring(tvb(16, 8):uint64()), plen)
    return 40 + olen + plen
end

function engine.dissector(tvb, pinfo, tree)
    return dissect_engine(tvb, pinfo, tree)
end

local kinds = { [1] = "Initial", [2] = "Retry", [3] = "Handshake", [4] = "Data", [5] = "Reject" }
local reasons = {
    [1] = "wrong key", [2] = "--insecure mismatch", [3] = "parameters", [4] = "damaged",
    [5] = "clocks too far apart", [6] = "wrong server key", [7] = "unknown peer",
    [8] = "key pair required", [9] = "server has no key pair",
}
local e = env.fields
e.kind = ProtoField.uint8("tcpfec_env.type", "Type", base.DEC, kinds)
e.version = ProtoField.uint8("tcpfec_env.version", "Version")
e.flags = ProtoField.uint8("tcpfec_env.flags", "Flags", base.HEX)
e.secure = ProtoField.bool("tcpfec_env.flags.secure", "Encrypted", 8, nil, 0x01)
e.aes = ProtoField.bool("tcpfec_env.flags.aes", "AES-256-GCM", 8, nil, 0x02)
e.ik = ProtoField.bool("tcpfec_env.flags.key_pairs", "Key pairs (IK)", 8, nil, 0x04)
e.ikpsk = ProtoField.bool("tcpfec_env.flags.key_pairs_psk", "Key pairs and pre-shared key", 8, nil, 0x08)
e.client_id = ProtoField.uint32("tcpfec_env.client_id", "Client id")
e.dst_id = ProtoField.uint32("tcpfec_env.dst_id", "Destination id")
e.token = ProtoField.bytes("tcpfec_env.token", "Token")
e.payload = ProtoField.bytes("tcpfec_env.payload", "Handshake message")
e.pn = ProtoField.uint64("tcpfec_env.pn", "Packet number")
e.body = ProtoField.bytes("tcpfec_env.body", "Sealed body")
e.reason = ProtoField.uint8("tcpfec_env.reason", "Reason", base.DEC, reasons)
e.server_key = ProtoField.bytes("tcpfec_env.server_key", "Server public key")

env.prefs.insecure = Pref.bool("Bodies are plain (--insecure)", false,
    "Decode data bodies as engine packets (only connections run with --insecure)")

function env.dissector(tvb, pinfo, tree)
    if tvb:len() < 5 then
        return 0
    end
    local kind = tvb(0, 1):uint()
    if not kinds[kind] then
        return 0
    end
    pinfo.cols.protocol = "tcpfec"
    local t = tree:add(env, tvb())
    t:add(e.kind, tvb(0, 1))
    pinfo.cols.info = kinds[kind]
    if kind == 1 and tvb:len() >= 11 then
        t:add(e.version, tvb(1, 1))
        local fl = t:add(e.flags, tvb(2, 1))
        for _, b in ipairs({ e.secure, e.aes, e.ik, e.ikpsk }) do
            fl:add(b, tvb(2, 1))
        end
        t:add(e.client_id, tvb(3, 4))
        local tl = tvb(7, 2):uint()
        if tl > 0 then
            t:add(e.token, tvb(9, tl))
        end
        local pl = tvb(9 + tl, 2):uint()
        t:add(e.payload, tvb(11 + tl, pl))
    elseif kind == 2 then
        t:add(e.client_id, tvb(1, 4))
        t:add(e.token, tvb(7, tvb(5, 2):uint()))
    elseif kind == 3 then
        t:add(e.client_id, tvb(1, 4))
        t:add(e.payload, tvb(7, tvb(5, 2):uint()))
    elseif kind == 4 and tvb:len() >= 13 then
        t:add(e.dst_id, tvb(1, 4))
        t:add(e.pn, tvb(5, 8))
        pinfo.cols.info = "Data pn=" .. tostring(tvb(5, 8):uint64())
        if tvb:len() > 13 then
            if env.prefs.insecure then
                dissect_engine(tvb(13):tvb(), pinfo, t)
            else
                t:add(e.body, tvb(13))
            end
        end
    elseif kind == 5 and tvb:len() >= 6 then
        t:add(e.client_id, tvb(1, 4))
        t:add(e.reason, tvb(5, 1))
        pinfo.cols.info = "Reject: " .. (reasons[tvb(5, 1):uint()] or "?")
        if tvb:len() >= 38 then
            t:add(e.server_key, tvb(6, 32))
        end
    end
    return tvb:len()
end

-- The simulator's captures: bare engine packets on port 7979. The real driver: the
-- envelope, on the ports tcpfec's examples use (add others with "Decode As").
DissectorTable.get("udp.port"):add(7979, engine)
for _, port in ipairs({ 5201, 7000, 7001, 7100 }) do
    DissectorTable.get("udp.port"):add(port, env)
end
