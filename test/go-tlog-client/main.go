// Command go-tlog-client reads a Vouch log through its c2sp.org/tlog-tiles endpoints with
// golang.org/x/mod/sumdb/note and sumdb/tlog, an implementation Vouch did not write, and
// verifies what it reads: the checkpoint's log signature (note.Open), the witnesses'
// cosignature/v1 lines (x/mod has no cosignature verifier, so this file checks them with
// crypto/ed25519 from the C2SP tlog-cosignature text), every tile against the checkpoint
// root (tlog.TileHashReader), the tree hash, an inclusion proof of every entry, the entry
// bundles against the leaf hashes, and a consistency proof from an older checkpoint.
//
// Usage: go-tlog-client -url URL -log L -vkey LOGKEY [-witness WKEY]... [-threshold N]
//
//	[-old OLD_CHECKPOINT_FILE] [-key APIKEY]
//
// Prints one JSON line with the counts and exits 0, or prints the failure and exits 1.
package main

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

type multi []string

func (m *multi) String() string     { return strings.Join(*m, ",") }
func (m *multi) Set(v string) error { *m = append(*m, v); return nil }

var (
	baseURL   = flag.String("url", "", "Vouch server base URL")
	logID     = flag.String("log", "", "log id")
	vkey      = flag.String("vkey", "", "log verifier key")
	apiKey    = flag.String("key", "", "API key (when the tiles are not public)")
	oldFile   = flag.String("old", "", "an older checkpoint note to prove consistency from")
	threshold = flag.Int("threshold", 0, "cosignatures required from -witness keys")
	witnesses multi
	checks    int
)

func main() {
	flag.Var(&witnesses, "witness", "witness verifier key (cosignature/v1), repeatable")
	flag.Parse()
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		os.Exit(1)
	}
}

func get(path string) ([]byte, error) {
	req, err := http.NewRequest("GET", strings.TrimRight(*baseURL, "/")+"/tlog/"+*logID+"/"+path, nil)
	if err != nil {
		return nil, err
	}
	if *apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+*apiKey)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != 200 {
		return nil, fmt.Errorf("GET %s: HTTP %d: %s", path, resp.StatusCode, body)
	}
	return body, nil
}

type checkpoint struct {
	origin string
	size   int64
	root   tlog.Hash
	text   string
}

// openCheckpoint verifies the log signature with x/mod's note package and parses the body.
func openCheckpoint(msg []byte, verifier note.Verifier) (*checkpoint, *note.Note, error) {
	n, err := note.Open(msg, note.VerifierList(verifier))
	if err != nil {
		return nil, nil, fmt.Errorf("note.Open: %w", err)
	}
	checks++
	lines := strings.Split(strings.TrimSuffix(n.Text, "\n"), "\n")
	if len(lines) < 3 {
		return nil, nil, errors.New("checkpoint body has fewer than 3 lines")
	}
	size, err := strconv.ParseInt(lines[1], 10, 64)
	if err != nil {
		return nil, nil, err
	}
	rootBytes, err := base64.StdEncoding.DecodeString(lines[2])
	if err != nil || len(rootBytes) != tlog.HashSize {
		return nil, nil, errors.New("bad root hash line")
	}
	var root tlog.Hash
	copy(root[:], rootBytes)
	return &checkpoint{origin: lines[0], size: size, root: root, text: n.Text}, n, nil
}

// cosigned counts the -witness keys with a valid cosignature/v1 line on the note
// (c2sp.org/tlog-cosignature: key ID = SHA-256(name || "\n" || 0x04 || key)[:4], signature
// = u64 time || Ed25519 over "cosignature/v1\ntime <t>\n" + checkpoint text).
func cosigned(n *note.Note, text string) (int, error) {
	count := 0
	for _, w := range witnesses {
		parts := strings.SplitN(w, "+", 3)
		if len(parts) != 3 {
			return 0, fmt.Errorf("bad witness key %q", w)
		}
		key, err := base64.StdEncoding.DecodeString(parts[2])
		if err != nil || len(key) != 33 || key[0] != 0x04 {
			return 0, fmt.Errorf("witness key %q is not a cosignature/v1 key", parts[0])
		}
		pub := ed25519.PublicKey(key[1:])
		h := sha256.Sum256(append(append([]byte(parts[0]+"\n"), 0x04), pub...))
		if fmt.Sprintf("%08x", binary.BigEndian.Uint32(h[:4])) != parts[1] {
			return 0, fmt.Errorf("witness key %q: key ID does not match", parts[0])
		}
		for _, sig := range n.UnverifiedSigs {
			if sig.Name != parts[0] || sig.Hash != binary.BigEndian.Uint32(h[:4]) {
				continue
			}
			raw, err := base64.StdEncoding.DecodeString(sig.Base64)
			if err != nil || len(raw) != 4+8+64 {
				continue
			}
			t := binary.BigEndian.Uint64(raw[4:12])
			msg := fmt.Sprintf("cosignature/v1\ntime %d\n%s", t, text)
			if ed25519.Verify(pub, []byte(msg), raw[12:]) {
				count++
				checks++
				break
			}
		}
	}
	return count, nil
}

// tileReader fetches tiles by their C2SP path: x/mod's Tile.Path() is "tile/8/L/N[.p/W]"
// (it names the tile height); c2sp.org/tlog-tiles drops the height: "tile/L/N[.p/W]".
// Tiles that TileHashReader verified (SaveTiles) are kept, as a tlog client's cache does.
type tileReader struct{ saved map[string][]byte }

func (tileReader) Height() int { return 8 }
func (r tileReader) ReadTiles(tiles []tlog.Tile) ([][]byte, error) {
	out := make([][]byte, len(tiles))
	for i, t := range tiles {
		path := strings.Replace(t.Path(), "tile/8/", "tile/", 1)
		if data, ok := r.saved[path]; ok {
			out[i] = data
			continue
		}
		data, err := get(path)
		if err != nil {
			return nil, err
		}
		out[i] = data
	}
	return out, nil
}
func (r tileReader) SaveTiles(tiles []tlog.Tile, data [][]byte) {
	for i, t := range tiles {
		r.saved[strings.Replace(t.Path(), "tile/8/", "tile/", 1)] = data[i]
	}
}

// entries reads the entry bundles covering leaves [0, size): each entry is a big-endian
// uint16 length and that many bytes.
func entries(size int64) ([][]byte, error) {
	var all [][]byte
	for n := int64(0); n*256 < size; n++ {
		w := size - n*256
		t := tlog.Tile{H: 8, L: 0, N: n, W: 256}
		if w < 256 {
			t.W = int(w)
		}
		path := strings.Replace(t.Path(), "tile/8/0/", "tile/entries/", 1)
		data, err := get(path)
		if err != nil {
			return nil, err
		}
		for len(data) > 0 {
			if len(data) < 2 {
				return nil, errors.New("truncated entry bundle")
			}
			l := int(binary.BigEndian.Uint16(data))
			if len(data) < 2+l {
				return nil, errors.New("truncated entry")
			}
			all = append(all, data[2:2+l])
			data = data[2+l:]
		}
	}
	if int64(len(all)) != size {
		return nil, fmt.Errorf("entry bundles hold %d entries, the tree %d", len(all), size)
	}
	return all, nil
}

func run() error {
	verifier, err := note.NewVerifier(*vkey)
	if err != nil {
		return fmt.Errorf("log key: %w", err)
	}
	msg, err := get("checkpoint")
	if err != nil {
		return err
	}
	cp, n, err := openCheckpoint(msg, verifier)
	if err != nil {
		return err
	}
	cosignatures, err := cosigned(n, cp.text)
	if err != nil {
		return err
	}
	if cosignatures < *threshold {
		return fmt.Errorf("%d valid cosignatures, threshold %d", cosignatures, *threshold)
	}
	hr := tlog.TileHashReader(tlog.Tree{N: cp.size, Hash: cp.root}, tileReader{saved: map[string][]byte{}})
	th, err := tlog.TreeHash(cp.size, hr)
	if err != nil {
		return fmt.Errorf("TreeHash: %w", err)
	}
	if th != cp.root {
		return errors.New("the tiles' tree hash is not the checkpoint root")
	}
	checks++
	all, err := entries(cp.size)
	if err != nil {
		return err
	}
	for i, entry := range all {
		leaf := tlog.RecordHash(entry)
		stored, err := hr.ReadHashes([]int64{tlog.StoredHashIndex(0, int64(i))})
		if err != nil {
			return fmt.Errorf("leaf %d: %w", i, err)
		}
		if stored[0] != leaf {
			return fmt.Errorf("entry %d does not hash to its leaf in the tiles", i)
		}
		proof, err := tlog.ProveRecord(cp.size, int64(i), hr)
		if err != nil {
			return fmt.Errorf("ProveRecord %d: %w", i, err)
		}
		if err := tlog.CheckRecord(proof, cp.size, cp.root, int64(i), leaf); err != nil {
			return fmt.Errorf("CheckRecord %d: %w", i, err)
		}
		checks += 2
	}
	consistency := 0
	if *oldFile != "" {
		oldMsg, err := os.ReadFile(*oldFile)
		if err != nil {
			return err
		}
		old, _, err := openCheckpoint(oldMsg, verifier)
		if err != nil {
			return fmt.Errorf("old checkpoint: %w", err)
		}
		if old.origin != cp.origin {
			return errors.New("the old checkpoint is for another log")
		}
		proof, err := tlog.ProveTree(cp.size, old.size, hr)
		if err != nil {
			return fmt.Errorf("ProveTree: %w", err)
		}
		if err := tlog.CheckTree(proof, cp.size, cp.root, old.size, old.root); err != nil {
			return fmt.Errorf("CheckTree from %d to %d: %w", old.size, cp.size, err)
		}
		consistency = 1
		checks++
	}
	out, _ := json.Marshal(map[string]any{
		"origin": cp.origin, "size": cp.size, "checks": checks,
		"cosignatures": cosignatures, "entries": len(all), "consistency": consistency,
		"root": base64.StdEncoding.EncodeToString(cp.root[:]),
	})
	fmt.Println(string(bytes.TrimSpace(out)))
	return nil
}
