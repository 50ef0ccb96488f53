// The validation scenarios in ns-3 (3.37): the Sato ch. 4 path and the Sato ch. 5
// dumbbell, configured like tcpfec's defaults (see docs/validation.md).
// Prints one line of key=value results.
#include "ns3/applications-module.h"
#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/network-module.h"
#include "ns3/point-to-point-module.h"
#include "ns3/traffic-control-module.h"

#include <iostream>
#include <sstream>
#include <vector>

using namespace ns3;

static uint32_t g_recoveries = 0;
static uint32_t g_losses = 0;

static void
OnCongState(TcpSocketState::TcpCongState_t from, TcpSocketState::TcpCongState_t to)
{
    if (to == TcpSocketState::CA_RECOVERY && from != TcpSocketState::CA_RECOVERY)
    {
        g_recoveries++;
    }
    if (to == TcpSocketState::CA_LOSS && from != TcpSocketState::CA_LOSS)
    {
        g_losses++;
    }
}

static void
HookSocket(uint32_t node)
{
    std::ostringstream path;
    path << "/NodeList/" << node << "/$ns3::TcpL4Protocol/SocketList/0/CongState";
    Config::ConnectWithoutContext(path.str(), MakeCallback(&OnCongState));
}

struct Snapshot
{
    std::vector<uint64_t> rx;
    uint32_t recoveries = 0;
    uint32_t losses = 0;
};

static std::vector<Ptr<PacketSink>> g_sinks;
static std::vector<Snapshot> g_snaps;

static void
TakeSnapshot()
{
    Snapshot s;
    for (auto& sink : g_sinks)
    {
        s.rx.push_back(sink->GetTotalRx());
    }
    s.recoveries = g_recoveries;
    s.losses = g_losses;
    g_snaps.push_back(s);
}

int
main(int argc, char* argv[])
{
    std::string topology = "path";
    std::string variant = "newreno-sack";
    uint32_t flows = 1;
    double delayMs = 200;
    double loss = 0.0005;
    uint32_t buffer = 50;
    uint32_t segment = 1460;
    std::string bottleneck = "100Mbps";
    std::string access = "100Mbps";
    double accessMinMs = 1;
    double accessMaxMs = 1;
    double duration = 220;
    double wstart = 20;
    double startSpread = 0;
    bool delack = false;
    uint32_t seed = 1;

    CommandLine cmd;
    cmd.AddValue("topology", "path or dumbbell", topology);
    cmd.AddValue("variant", "newreno-sack, newreno, cubic or bbr", variant);
    cmd.AddValue("flows", "number of flows (dumbbell)", flows);
    cmd.AddValue("delayMs", "bottleneck one-way delay, ms", delayMs);
    cmd.AddValue("loss", "random loss on the bottleneck, data direction", loss);
    cmd.AddValue("buffer", "drop-tail limit of every device, packets", buffer);
    cmd.AddValue("segment", "TCP segment size, bytes", segment);
    cmd.AddValue("bottleneck", "bottleneck rate", bottleneck);
    cmd.AddValue("access", "access rate", access);
    cmd.AddValue("accessMinMs", "smallest access delay", accessMinMs);
    cmd.AddValue("accessMaxMs", "largest access delay", accessMaxMs);
    cmd.AddValue("duration", "simulated seconds", duration);
    cmd.AddValue("wstart", "start of the measurement window, s", wstart);
    cmd.AddValue("startSpread", "flows start uniformly in [0, startSpread] s", startSpread);
    cmd.AddValue("delack", "delayed ACKs (every 2nd segment)", delack);
    cmd.AddValue("seed", "run number", seed);
    cmd.Parse(argc, argv);

    RngSeedManager::SetSeed(1);
    RngSeedManager::SetRun(seed);

    if (variant == "bbr")
    {
        // ns-3.37's TcpBbr is BBR v1 and needs the socket's pacing (SACK on, as in Linux).
        Config::SetDefault("ns3::TcpL4Protocol::SocketType", TypeIdValue(TcpBbr::GetTypeId()));
        Config::SetDefault("ns3::TcpSocketState::EnablePacing", BooleanValue(true));
        // RTO = SRTT + max(G, 4 RTTVAR): a 200 ms G gives Linux's effective rule, which
        // tcpfec's BBR schemes use too. With 1 ms the RTO on a steady path is SRTT + 1 ms
        // and fires during every SACK recovery (measured: 0.01 Mb/s at 1 % loss).
        Config::SetDefault("ns3::TcpSocketBase::ClockGranularity", TimeValue(MilliSeconds(200)));
    }
    else if (variant == "cubic")
    {
        Config::SetDefault("ns3::TcpL4Protocol::SocketType", TypeIdValue(TcpCubic::GetTypeId()));
        Config::SetDefault("ns3::TcpCubic::HyStart", BooleanValue(false));
    }
    else
    {
        Config::SetDefault("ns3::TcpL4Protocol::SocketType",
                           TypeIdValue(TcpNewReno::GetTypeId()));
    }
    if (variant != "bbr")
    {
        Config::SetDefault("ns3::TcpL4Protocol::RecoveryType",
                           TypeIdValue(TcpClassicRecovery::GetTypeId()));
    }
    Config::SetDefault("ns3::TcpSocketBase::Sack", BooleanValue(variant != "newreno"));
    Config::SetDefault("ns3::TcpSocketBase::Timestamp", BooleanValue(false));
    Config::SetDefault("ns3::TcpSocketBase::MinRto", TimeValue(MilliSeconds(200)));
    Config::SetDefault("ns3::TcpSocket::SegmentSize", UintegerValue(segment));
    Config::SetDefault("ns3::TcpSocket::InitialCwnd", UintegerValue(2));
    Config::SetDefault("ns3::TcpSocket::DelAckCount", UintegerValue(delack ? 2 : 1));
    Config::SetDefault("ns3::TcpSocket::DelAckTimeout", TimeValue(MilliSeconds(100)));
    Config::SetDefault("ns3::TcpSocket::SndBufSize", UintegerValue(64 << 20));
    Config::SetDefault("ns3::TcpSocket::RcvBufSize", UintegerValue(64 << 20));

    std::ostringstream q;
    q << buffer << "p";
    PointToPointHelper link;
    link.SetQueue("ns3::DropTailQueue<Packet>", "MaxSize", QueueSizeValue(QueueSize(q.str())));

    NodeContainer routers;
    routers.Create(2);
    uint32_t nflows = topology == "path" ? 1 : flows;
    NodeContainer senders;
    NodeContainer receivers;
    senders.Create(nflows);
    receivers.Create(nflows);
    InternetStackHelper stack;
    stack.InstallAll();
    Ipv4AddressHelper addr;
    TrafficControlHelper tch;

    link.SetDeviceAttribute("DataRate", StringValue(bottleneck));
    std::ostringstream d;
    d << delayMs << "ms";
    link.SetChannelAttribute("Delay", StringValue(d.str()));
    NetDeviceContainer core = link.Install(routers.Get(0), routers.Get(1));
    addr.SetBase("10.0.0.0", "255.255.255.0");
    addr.Assign(core);
    tch.Uninstall(core);
    if (loss > 0)
    {
        Ptr<RateErrorModel> em = CreateObject<RateErrorModel>();
        em->SetAttribute("ErrorRate", DoubleValue(loss));
        em->SetAttribute("ErrorUnit", StringValue("ERROR_UNIT_PACKET"));
        core.Get(1)->SetAttribute("ReceiveErrorModel", PointerValue(em));
    }

    std::vector<Ipv4Address> dst;
    for (uint32_t i = 0; i < nflows; i++)
    {
        double a = nflows > 1 ? accessMinMs + (accessMaxMs - accessMinMs) * i / (nflows - 1)
                              : accessMinMs;
        std::ostringstream ad;
        ad << a << "ms";
        link.SetDeviceAttribute("DataRate", StringValue(access));
        link.SetChannelAttribute("Delay", StringValue(ad.str()));
        NetDeviceContainer left = link.Install(senders.Get(i), routers.Get(0));
        NetDeviceContainer right = link.Install(routers.Get(1), receivers.Get(i));
        std::ostringstream l;
        std::ostringstream r;
        l << "10.1." << i << ".0";
        r << "10.2." << i << ".0";
        addr.SetBase(l.str().c_str(), "255.255.255.0");
        addr.Assign(left);
        addr.SetBase(r.str().c_str(), "255.255.255.0");
        Ipv4InterfaceContainer ri = addr.Assign(right);
        tch.Uninstall(left);
        tch.Uninstall(right);
        dst.push_back(ri.GetAddress(1));
    }
    Ipv4GlobalRoutingHelper::PopulateRoutingTables();

    Ptr<UniformRandomVariable> start = CreateObject<UniformRandomVariable>();
    for (uint32_t i = 0; i < nflows; i++)
    {
        uint16_t port = 5000 + i;
        BulkSendHelper bulk("ns3::TcpSocketFactory", InetSocketAddress(dst[i], port));
        bulk.SetAttribute("MaxBytes", UintegerValue(0));
        bulk.SetAttribute("SendSize", UintegerValue(segment * 8));
        ApplicationContainer src = bulk.Install(senders.Get(i));
        double t = startSpread > 0 ? start->GetValue(0, startSpread) : 0.0;
        src.Start(Seconds(t));
        PacketSinkHelper sinkHelper("ns3::TcpSocketFactory",
                                    InetSocketAddress(Ipv4Address::GetAny(), port));
        ApplicationContainer sink = sinkHelper.Install(receivers.Get(i));
        sink.Start(Seconds(0));
        g_sinks.push_back(DynamicCast<PacketSink>(sink.Get(0)));
        Simulator::Schedule(Seconds(t + 1e-6), &HookSocket, senders.Get(i)->GetId());
    }

    Simulator::Schedule(Seconds(wstart), &TakeSnapshot);
    if (topology != "path")
    {
        Simulator::Schedule(Seconds(0), &TakeSnapshot);
    }
    Simulator::Schedule(Seconds(duration), &TakeSnapshot);
    Simulator::Stop(Seconds(duration + 1e-9));
    Simulator::Run();

    // Snapshots: path = [wstart, end]; dumbbell = [0, wstart, end].
    const Snapshot& a = g_snaps[g_snaps.size() - 2];
    const Snapshot& b = g_snaps.back();
    double total = 0;
    std::ostringstream perflow;
    for (uint32_t i = 0; i < nflows; i++)
    {
        double mbps = (b.rx[i] - a.rx[i]) * 8.0 / (duration - wstart) / 1e6;
        total += mbps;
        perflow << (i ? ";" : "") << mbps;
    }
    std::cout << "goodput_mbps=" << total << " flows=" << perflow.str()
              << " fast_recoveries=" << (b.recoveries - a.recoveries)
              << " timeouts=" << (b.losses - a.losses);
    if (topology != "path")
    {
        const Snapshot& z = g_snaps[0];
        double early = 0;
        for (uint32_t i = 0; i < nflows; i++)
        {
            early += (a.rx[i] - z.rx[i]) * 8.0 / wstart / 1e6;
        }
        std::cout << " goodput_early_mbps=" << early;
    }
    std::cout << std::endl;
    Simulator::Destroy();
    return 0;
}
