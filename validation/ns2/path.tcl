# Sato ch. 4 path in ns-2.35: sender -1 ms- R1 -D, loss p- R2 -1 ms- receiver, 100 Mb/s,
# drop-tail on every link direction, one Agent/TCP/Sack1 bulk flow.
# Usage: ns path.tcl DELAY_MS LOSS_FRACTION SEED DELACK(0|1) [BUFFER] [DURATION] [WSTART] [AGENT]
# AGENT is Sack1 (default), Newreno, Reno or TCP (Tahoe).
# Prints one line of key=value results measured over [WSTART, DURATION].
if {$argc < 4} {
    puts stderr "usage: ns path.tcl DELAY_MS LOSS SEED DELACK \[BUFFER DURATION WSTART\]"
    exit 2
}
set delay_ms [lindex $argv 0]
set loss [lindex $argv 1]
set seed [lindex $argv 2]
set delack [lindex $argv 3]
set buffer [expr {$argc > 4 ? [lindex $argv 4] : 50}]
set duration [expr {$argc > 5 ? [lindex $argv 5] : 220.0}]
set wstart [expr {$argc > 6 ? [lindex $argv 6] : 20.0}]
set agent [expr {$argc > 7 ? [lindex $argv 7] : "Sack1"}]

global defaultRNG
$defaultRNG seed $seed

set ns [new Simulator]
set s [$ns node]
set r1 [$ns node]
set r2 [$ns node]
set d [$ns node]
$ns duplex-link $s $r1 100Mb 1ms DropTail
$ns duplex-link $r1 $r2 100Mb ${delay_ms}ms DropTail
$ns duplex-link $r2 $d 100Mb 1ms DropTail
foreach {a b} [list $s $r1 $r1 $s $r1 $r2 $r2 $r1 $r2 $d $d $r2] {
    $ns queue-limit $a $b $buffer
}

if {$loss > 0} {
    set em [new ErrorModel]
    $em unit pkt
    $em set rate_ $loss
    set rv [new RandomVariable/Uniform]
    $rv use-rng [new RNG]
    $em ranvar $rv
    $em drop-target [new Agent/Null]
    $ns lossmodel $em $r1 $r2
}

if {$agent eq "TCP"} { set tcp [new Agent/TCP] } else { set tcp [new Agent/TCP/$agent] }
$tcp set packetSize_ 1460
$tcp set window_ 1000000
$tcp set windowInit_ 2
$tcp set minrto_ 0.2
$tcp set maxrto_ 60
$tcp set tcpTick_ 0.001
$tcp set timestamps_ true
set sinkclass [expr {$agent eq "Sack1" ? "Agent/TCPSink/Sack1" : "Agent/TCPSink"}]
if {$delack} {
    set sink [new $sinkclass/DelAck]
    $sink set interval_ 0.1
} else {
    set sink [new $sinkclass]
}
$sink set ts_echo_rfc1323_ true
$ns attach-agent $s $tcp
$ns attach-agent $d $sink
$ns connect $tcp $sink
set ftp [$tcp attach-app FTP]
$ns at 0.0 "$ftp start"

proc snap {} {
    global tcp
    return [list [$tcp set ack_] [$tcp set ndatapack_] [$tcp set nrexmitpack_] [$tcp set nrexmit_] [$tcp set ncwndcuts1_]]
}
set at_start {0 0 0 0 0}
proc mark {} {
    global at_start
    set at_start [snap]
}
proc finish {} {
    global at_start duration wstart
    set e [snap]
    set acked [expr {[lindex $e 0] - [lindex $at_start 0]}]
    set sent [expr {[lindex $e 1] - [lindex $at_start 1]}]
    set rexmit [expr {[lindex $e 2] - [lindex $at_start 2]}]
    set rto [expr {[lindex $e 3] - [lindex $at_start 3]}]
    set cuts [expr {[lindex $e 4] - [lindex $at_start 4]}]
    set goodput [expr {$acked * 1460.0 * 8.0 / ($duration - $wstart) / 1e6}]
    puts "goodput_mbps=$goodput data_packets=$sent retransmissions=$rexmit timeouts=$rto cwnd_cuts=$cuts"
    exit 0
}
$ns at $wstart "mark"
$ns at $duration "finish"
$ns run
