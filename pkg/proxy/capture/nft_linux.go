package capture

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"

	"github.com/google/nftables"
	"github.com/google/nftables/binaryutil"
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"
)

// apply installs the tables (or with Cleanup deletes them) in the current
// network namespace, in one netlink batch: the kernel applies all of it
// or none.
func apply(c *Config) error {
	conn, err := nftables.New()
	if err != nil {
		return fmt.Errorf("opening netlink: %w", err)
	}
	defer conn.CloseLasting()
	for _, t := range c.tables() {
		nt := &nftables.Table{Family: nfFamily(t.family), Name: TableName}
		// Adding a table that exists is no error, deleting one that
		// does not is: add, then delete, leaves no table either way.
		conn.AddTable(nt)
		conn.DelTable(nt)
		if c.Cleanup {
			continue
		}
		conn.AddTable(nt)
		for _, ch := range t.chains {
			hook := nftables.ChainHookPrerouting
			if ch.hook == "output" {
				hook = nftables.ChainHookOutput
			}
			accept := nftables.ChainPolicyAccept
			nc := conn.AddChain(&nftables.Chain{
				Name:     ch.name,
				Table:    nt,
				Type:     nftables.ChainTypeNAT,
				Hooknum:  hook,
				Priority: nftables.ChainPriorityNATDest,
				Policy:   &accept,
			})
			for _, r := range ch.rules {
				conn.AddRule(&nftables.Rule{Table: nt, Chain: nc, Exprs: r.exprs(t.family)})
			}
		}
	}
	if err := conn.Flush(); err != nil {
		if errors.Is(err, os.ErrPermission) || errors.Is(err, unix.EPERM) {
			return fmt.Errorf("the kernel refused the rules (run as root with the NET_ADMIN capability): %w", err)
		}
		return fmt.Errorf("the kernel refused the rules (does it have nf_tables with nat and redirect?): %w", err)
	}
	return nil
}

func nfFamily(f family) nftables.TableFamily {
	if f == ipv6 {
		return nftables.TableFamilyIPv6
	}
	return nftables.TableFamilyIPv4
}

// exprs compiles a rule into nf_tables expressions, as nft compiles its
// text: load into register 1, compare, and at the end a verdict or a
// redirection.
func (r rule) exprs(f family) []expr.Any {
	var out []expr.Any
	cmp := func(data []byte) expr.Any { return &expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: data} }
	for _, m := range r.matches {
		switch m.kind {
		case matchTCP:
			out = append(out, &expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1}, cmp([]byte{unix.IPPROTO_TCP}))
		case matchDport:
			out = append(out,
				&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2},
				cmp(binaryutil.BigEndian.PutUint16(m.port)))
		case matchUID:
			out = append(out, &expr.Meta{Key: expr.MetaKeySKUID, Register: 1}, cmp(binaryutil.NativeEndian.PutUint32(m.id)))
		case matchGID:
			out = append(out, &expr.Meta{Key: expr.MetaKeySKGID, Register: 1}, cmp(binaryutil.NativeEndian.PutUint32(m.id)))
		case matchOifname:
			name := make([]byte, unix.IFNAMSIZ)
			copy(name, m.name)
			out = append(out, &expr.Meta{Key: expr.MetaKeyOIFNAME, Register: 1}, cmp(name))
		case matchDaddr:
			// The destination address: at 16 in an IPv4 header, 24 in
			// an IPv6 one; masked to the prefix, then compared.
			offset, size := uint32(16), uint32(4)
			if f == ipv6 {
				offset, size = 24, 16
			}
			addr := m.prefix.Addr().AsSlice()
			mask := make([]byte, size)
			for i := 0; i < m.prefix.Bits(); i++ {
				mask[i/8] |= 0x80 >> (i % 8)
			}
			out = append(out,
				&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: offset, Len: size},
				&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: size, Mask: mask, Xor: make([]byte, size)},
				cmp(addr))
		}
	}
	if r.redirect == 0 {
		return append(out, &expr.Verdict{Kind: expr.VerdictReturn})
	}
	port := make([]byte, 2)
	binary.BigEndian.PutUint16(port, r.redirect)
	return append(out,
		&expr.Immediate{Register: 1, Data: port},
		&expr.Redir{RegisterProtoMin: 1})
}
