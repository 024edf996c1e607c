package replica_test

import (
	"testing"
	"time"

	"github.com/ringfire/ringfire/internal/netns"
	"github.com/ringfire/ringfire/replica"
)

func TestByteForByteCopy(t *testing.T) {
	netns.Require(t)
	for _, mode := range []string{"tcp", "multicast", "unicast"} {
		t.Run(mode, func(t *testing.T) {
			p := netns.NewPair(t)
			src := newSource(t, p.A, p.AAddr, 4096)
			src.push(3000)
			scfg, mcfg := transportConfigs(mode)
			src.serve(scfg)
			mcfg.From = replica.From{Mode: replica.FromOldest}
			mr := startMirror(t, p.B, p.BAddr, src, mcfg, nil)
			src.pushPaced(5000, 50, 200*time.Microsecond)
			st := mr.waitFor(8000, 10*time.Second)
			mr.close()
			sameSlots(t, src.path, mr.path, 1)
			if st.Gaps != 0 || st.Records != 8000 {
				t.Fatalf("stats %+v", st)
			}
		})
	}
}

// transportConfigs returns the server and mirror settings of a mode.
func transportConfigs(mode string) (replica.ServerConfig, replica.MirrorConfig) {
	switch mode {
	case "multicast":
		return replica.ServerConfig{Multicast: mcastGroup()}, replica.MirrorConfig{}
	case "unicast":
		return replica.ServerConfig{UDPPort: 7403}, replica.MirrorConfig{Unicast: true}
	}
	return replica.ServerConfig{}, replica.MirrorConfig{TCPOnly: true}
}
