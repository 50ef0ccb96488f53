# Sato ch. 5 dumbbell in ns-2.35: N Agent/TCP/Newreno bulk flows, access links with delays
# spread over [AMIN, AMAX] ms, a shared bottleneck R1-R2, drop-tail on every direction.
# Usage: ns dumbbell.tcl FLOWS DELAY_MS SEED [BUFFER BOTTLENECK_MBPS ACCESS_MBPS AMIN AMAX DURATION WSTART SEGMENT]
set flows [lindex $argv 0]
set delay_ms [lindex $argv 1]
set seed [lindex $argv 2]
proc arg {i default} {
    global argc argv
    return [expr {$argc > $i ? [lindex $argv $i] : $default}]
}
set buffer [arg 3 300]
set bneck [arg 4 50]
set access [arg 5 100]
set amin [arg 6 1]
set amax [arg 7 5]
set duration [arg 8 60.0]
set wstart [arg 9 20.0]
set segment [arg 10 1000]

global defaultRNG
$defaultRNG seed $seed
set ns [new Simulator]
set r1 [$ns node]
set r2 [$ns node]
$ns duplex-link $r1 $r2 ${bneck}Mb ${delay_ms}ms DropTail
$ns queue-limit $r1 $r2 $buffer
$ns queue-limit $r2 $r1 $buffer
set startrng [new RNG]
$startrng seed [expr {$seed + 1}]
set tcps {}
for {set i 0} {$i < $flows} {incr i} {
    set a [expr {$flows > 1 ? $amin + ($amax - $amin) * double($i) / ($flows - 1) : $amin}]
    set s [$ns node]
    set d [$ns node]
    $ns duplex-link $s $r1 ${access}Mb ${a}ms DropTail
    $ns duplex-link $r2 $d ${access}Mb ${a}ms DropTail
    foreach {x y} [list $s $r1 $r1 $s $r2 $d $d $r2] { $ns queue-limit $x $y $buffer }
    set tcp [new Agent/TCP/Newreno]
    $tcp set packetSize_ $segment
    $tcp set window_ 1000000
    $tcp set windowInit_ 2
    $tcp set minrto_ 0.2
    $tcp set tcpTick_ 0.001
    $tcp set timestamps_ true
    set sink [new Agent/TCPSink]
    $sink set ts_echo_rfc1323_ true
    $ns attach-agent $s $tcp
    $ns attach-agent $d $sink
    $ns connect $tcp $sink
    set ftp [$tcp attach-app FTP]
    $ns at [$startrng uniform 0 1] "$ftp start"
    lappend tcps $tcp
}
proc acks {} {
    global tcps
    set out {}
    foreach t $tcps { lappend out [$t set ack_] }
    return $out
}
set mid {}
proc mark {} { global mid; set mid [acks] }
proc finish {} {
    global mid duration wstart segment
    set end [acks]
    set total 0.0
    set early 0.0
    set per {}
    foreach a $mid b $end {
        # ack_ starts at -1: the first segment is number 0.
        if {$wstart > 0} {
            set early [expr {$early + ($a + 1) * $segment * 8.0 / $wstart / 1e6}]
        }
        set g [expr {($b - $a) * $segment * 8.0 / ($duration - $wstart) / 1e6}]
        set total [expr {$total + $g}]
        lappend per $g
    }
    puts "goodput_mbps=$total flows=[join $per {;}] goodput_early_mbps=$early"
    exit 0
}
$ns at $wstart "mark"
$ns at $duration "finish"
$ns run
