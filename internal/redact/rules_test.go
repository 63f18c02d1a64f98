package redact

import (
	"strings"
	"testing"
)

const ghTok = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJ" // 36 alphanumerics

// ruleCases lists inputs with their redacted form; each is also checked
// split at every offset and written one byte at a time.
var ruleCases = []struct{ name, in, want string }{
	{"github classic", "t=ghp_" + ghTok + " ok", "t=" + Marker + " ok"},
	{"github oauth", "gho_" + ghTok + "XYZ\n", Marker + "\n"},
	{"github all prefixes", "ghu_" + ghTok + ",ghs_" + ghTok + ",ghr_" + ghTok + ".", Marker + "," + Marker + "," + Marker + "."},
	{"github too short", "ghp_short ok", "ghp_short ok"},
	{"github 35 chars", "ghp_" + ghTok[:35] + " ok", "ghp_" + ghTok[:35] + " ok"},
	{"github pat", "github_pat_11ABCDEFG0123456789_abcdefghijkl rest", Marker + " rest"},
	{"github pat short", "github_pat_abc rest", "github_pat_abc rest"},
	{"aws", "id=AKIAIOSFODNN7EXAMPLE;", "id=" + Marker + ";"},
	{"aws asia", "ASIAY34FZKBOKMUTVV7A\n", Marker + "\n"},
	{"aws short", "AKIAIOSFODNN7EXAM;", "AKIAIOSFODNN7EXAM;"},
	{"aws lower case", "AKIAiosfodnn7example;", "AKIAiosfodnn7example;"},
	{"aws too long", "AKIAIOSFODNN7EXAMPLE1 x", "AKIAIOSFODNN7EXAMPLE1 x"},
	{"aws at the end of a word", "id:AKIAIOSFODNN7EXAMPLEs", "id:" + Marker + "s"},
	{"aws inside upper-case hex", "sha256=C2A62FC2F27EACCAD1A4FF4B6E57B41F7260B8F7\n", "sha256=C2A62FC2F27EACCAD1A4FF4B6E57B41F7260B8F7\n"},
	{"aws glued to a word", "KEYAKIAIOSFODNN7EXAMPLE;", "KEYAKIAIOSFODNN7EXAMPLE;"},
	{"aws inside dna", "GATTACAGGTTACCAAGTCCATGATCGATCGG\n", "GATTACAGGTTACCAAGTCCATGATCGATCGG\n"},
	{"aws inside a name", "EASTASIANWIDTHPROPERTYTAB\n", "EASTASIANWIDTHPROPERTYTAB\n"},
	{"aws after a json escape", `"keys:\nAKIAIOSFODNN7EXAMPLE"`, `"keys:\n` + Marker + `"`},
	{"aws after a unicode escape", `"\u003dAKIAIOSFODNN7EXAMPLE"`, `"\u003d` + Marker + `"`},
	{"github after a percent escape", "q=tok%3Dghp_" + ghTok + "&x", "q=tok%3D" + Marker + "&x"},
	{"github after a hex escape", `'\x3dghp_` + ghTok + `'`, `'\x3d` + Marker + `'`},
	{"openai service account", "OPENAI_API_KEY=sk-svcacct-AbCdEfGhIjKlMnOpQrStUv_x ok", "OPENAI_API_KEY=" + Marker + " ok"},
	{"openai admin key", "key: sk-admin-AbCdEfGhIjKlMnOpQrStUv-x\n", "key: " + Marker + "\n"},
	{"gitlab", "GITLAB_TOKEN=glpat-Ab1Cd2Ef3Gh4Ij5Kl6Mn ok", "GITLAB_TOKEN=" + Marker + " ok"},
	{"npm", "//registry.npmjs.org/:_authToken=npm_" + ghTok + " x", "//registry.npmjs.org/:_authToken=" + Marker + " x"},
	{"npm config names are no token", "npm_config_registry=x npm_package_version=1", "npm_config_registry=x npm_package_version=1"},
	{"pypi", "password = pypi-AgEIcHlwaS5vcmc" + ghTok + ghTok + "\n", "password = " + Marker + "\n"},
	{"google api key", "key=AIzaSyD-abcdefghijklmnopqrstuvwxyz01234&x", "key=" + Marker + "&x"},
	{"google api key inside a longer run", "AIza-AIzaSyD-abcdefghijklmnopqrstuvwxyz01234\n", "AIza-" + Marker + "\n"},
	{"google api keys nested twice", "AIza_AIza-AIzaSyD-abcdefghijklmnopqrstuvwxyz01234 x", "AIza_AIza-" + Marker + " x"},
	{"google api key too long", "AIzaSyD-abcdefghijklmnopqrstuvwxyz012345 x", "AIzaSyD-abcdefghijklmnopqrstuvwxyz012345 x"},
	{"token glued inside another's marker", "xoxb-ACCAsk-proj-abcdefghijklmnopqrstuvwxyz_tail\n", Marker + "_tail\n"},
	{"token after a colour sequence", "API key: \x1b[36msk-proj-abcdefghijklmnopqrstuvwxyz\x1b[0m\n", "API key: \x1b[36m" + Marker + "\x1b[0m\n"},
	{"token after a colour sequence of three parameters", "\x1b[1;38;5mghp_" + ghTok + "\x1b[0m\n", "\x1b[1;38;5m" + Marker + "\x1b[0m\n"},
	{"token after a colour sequence in json", `"\u001b[33mAKIAIOSFODNN7EXAMPLE\u001b[0m"`, `"\u001b[33m` + Marker + `\u001b[0m"`},
	{"token after grep's colour", "\x1b[01;31m\x1b[KAKIAIOSFODNN7EXAMPLE\x1b[m\x1b[K\n", "\x1b[01;31m\x1b[K" + Marker + "\x1b[m\x1b[K\n"},
	{"token after a truecolour sequence", "\x1b[1;38;2;249;38;114;48;2;39;40;34mghp_" + ghTok + "\x1b[0m\n", "\x1b[1;38;2;249;38;114;48;2;39;40;34m" + Marker + "\x1b[0m\n"},
	{"token after rust's escape", `"\u{1b}[36mghp_` + ghTok + `"`, `"\u{1b}[36m` + Marker + `"`},
	{"token after rust's escape in upper case", `"\u{1B}[36mghp_` + ghTok + `"`, `"\u{1B}[36m` + Marker + `"`},
	{"token after perl's escape", `"\x{1b}[36mghp_` + ghTok + `"`, `"\x{1b}[36m` + Marker + `"`},
	{"token after cat -v's escape", "^[[1;32mghp_" + ghTok + "^[[0m\n", "^[[1;32m" + Marker + "^[[0m\n"},
	{"token after a word ending in m", "xm[36mghp_" + ghTok + "\n", "xm[36mghp_" + ghTok + "\n"},
	{"token after a long unicode escape", `"\U0001f511ghp_` + ghTok + `"`, `"\U0001f511` + Marker + `"`},
	{"openai prefix inside a word", "task-proj-backend-deployment-7d9f8c\n", "task-proj-backend-deployment-7d9f8c\n"},
	{"anthropic prefix inside a word", "desk-ant-design-components-v5-abcdef\n", "desk-ant-design-components-v5-abcdef\n"},
	{"slack prefix inside a word", "myxapp-frontend-service-deployment\n", "myxapp-frontend-service-deployment\n"},
	{"stripe prefix inside a word", "test_bookmark_test_createsNewBookmarkFolder\n", "test_bookmark_test_createsNewBookmarkFolder\n"},
	{"token after an underscore", "GH_ghp_" + ghTok + "\n", "GH_" + Marker + "\n"},
	{"slack", "xoxb-123456789012-abcdefABCDEF ok", Marker + " ok"},
	{"slack app", "xapp-1-A0123456789-abc ok", Marker + " ok"},
	{"slack short", "xoxb-12345 ok", "xoxb-12345 ok"},
	{"stripe", "sk_live_4eC39HqLyjWDarjtT1zdp7dc.", Marker + "."},
	{"stripe test", "rk_test_abcdefghijklmnop", Marker},
	{"stripe short", "sk_live_abc ok", "sk_live_abc ok"},
	{"openai", "OPENAI=sk-proj-abcdefghij_KLMNOPQRST-uv\n", "OPENAI=" + Marker + "\n"},
	{"anthropic", "sk-ant-api03-abcdefghijklmnopqrstuvwxyz ok", Marker + " ok"},
	{"anthropic short", "sk-ant-abc ok", "sk-ant-abc ok"},
	{"jwt", "jwt=eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U rest", "jwt=" + Marker + " rest"},
	{"jwt short segment", "eyJhbGciOi.eyJ.abcdef rest", "eyJhbGciOi.eyJ.abcdef rest"},
	{"jwt two segments", "eyJhbGciOi.eyJzdWIi rest", "eyJhbGciOi.eyJzdWIi rest"},
	{"jwt signature too short", "eyJhbGciOi.eyJzdWIi.abc rest", "eyJhbGciOi.eyJzdWIi.abc rest"},
	{"pem", "key:\n-----BEGIN RSA PRIVATE KEY-----\nMIIEow\nIBAAK\n-----END RSA PRIVATE KEY-----\nnext line", "key:\n" + Marker + "\nnext line"},
	{"pem openssh", "-----BEGIN OPENSSH PRIVATE KEY-----\nb3Blbn\n-----END OPENSSH PRIVATE KEY-----", Marker},
	{"pem plain", "--------BEGIN PRIVATE KEY-----\nabc\n-----END PRIVATE KEY-----\n", "---" + Marker + "\n"},
	{"pem encrypted", "-----BEGIN ENCRYPTED PRIVATE KEY-----\nabc\n-----END ENCRYPTED PRIVATE KEY-----x", Marker + "x"},
	{"pem wrong end label", "-----BEGIN EC PRIVATE KEY-----\nabc\n-----END RSA PRIVATE KEY-----\nstill secret", Marker},
	{"pem without end", "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEE\nmore\n" + strings.Repeat("QUJD", 5000), Marker},
	{"pem certificate", "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n", "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"},
	{"pem public", "-----BEGIN PUBLIC KEY-----\n", "-----BEGIN PUBLIC KEY-----\n"},
	{"bearer", "Authorization: Bearer abc.def.gh-ghi\nnext", "Authorization: Bearer " + Marker + "\nnext"},
	{"basic lower case", "authorization: basic dXNlcjpwYXNz end", "authorization: basic " + Marker + " end"},
	{"token mixed case", "AUTHORIZATION:TOKEN x2345678", "AUTHORIZATION:TOKEN " + Marker},
	{"header in json", `{"Authorization": "Bearer abc12345"}`, `{"Authorization": "Bearer ` + Marker + `"}`}, // to the closing quote
	{"unknown scheme", "Authorization: Digest abc", "Authorization: Digest abc"},
	{"proxy header", "Proxy-Authorization: Basic Zm9vOmJhcg==\n", "Proxy-Authorization: Basic " + Marker + "\n"},
	{"no credential", "Authorization: Bearer\nx", "Authorization: Bearer\nx"},
	{"credential of eight bytes", "Authorization: Basic dXNlcjpw\n", "Authorization: Basic " + Marker + "\n"},
	{"short word after the scheme", "fix Authorization: Basic parsing\n", "fix Authorization: Basic parsing\n"},
	{"prose after the scheme", `msg="invalid authorization: bearer token expired"`, `msg="invalid authorization: bearer token expired"`},
	{"placeholders after the scheme", "Authorization: Bearer <token>\nAuthorization: Bearer $TOKEN\nAuthorization: Token ${API_KEY}\nAuthorization: Basic ***\n",
		"Authorization: Bearer <token>\nAuthorization: Bearer $TOKEN\nAuthorization: Token ${API_KEY}\nAuthorization: Basic ***\n"},
	{"credential cut by the end of the stream", "Authorization: Bearer abc12", "Authorization: Bearer " + Marker},
	{"name repeating its start", "authorizauthorization: Bearer x2345678 y", "authorizauthorization: Bearer " + Marker + " y"},
	{"header inside a credential", "Authorization: Bearer Authorization: x", "Authorization: Bearer " + Marker + " x"},
	{"url password", "GET https://bob:s3cret@example.com/x", "GET https://bob:" + Marker + "@example.com/x"},
	{"url empty user", "redis://:hunter2@cache:6379/0", "redis://:" + Marker + "@cache:6379/0"},
	{"url no password", "https://bob@example.com/ https://example.com:8443/x", "https://bob@example.com/ https://example.com:8443/x"},
	{"url empty password", "ftp://bob:@host", "ftp://bob:@host"},
	{"url port only", "listening on http://localhost:8080\n", "listening on http://localhost:8080\n"},
	{"url password with colon", "amqp://u:p:w@h", "amqp://u:" + Marker + "@h"},
	{"two rules touching", "ghp_" + ghTok + "AKIAIOSFODNN7EXAMPLE", Marker},
	{"url password with a raw @", "redis://:p@ssw0rd!2024@redis:6379/0 ok", "redis://:" + Marker + "@redis:6379/0 ok"},
	{"url port in cjk text", "访问http://127.0.0.1:8080失败，请联系ops@corp.com\n", "访问http://127.0.0.1:8080失败，请联系ops@corp.com\n"},
	{"url password with raw # ^ |", "postgres://app:p^ss#w0|rd@db:5432/app", "postgres://app:" + Marker + "@db:5432/app"},
	{"url password json-escaped", `{"dsn":"postgres://app:Xk9\u0026mLp2qRt@db:5432/x"}`, `{"dsn":"postgres://app:` + Marker + `@db:5432/x"}`},
	{"url host then another address", "https://bob:pw@example.com mail bob@example.org", "https://bob:" + Marker + "@example.com mail bob@example.org"},
	{"url host in json then an address", `{"u":"https://bob:pw@h","e":"a@b"}`, `{"u":"https://bob:` + Marker + `@h","e":"a@b"}`},
	{"url port at the end of the stream", "listening on http://localhost:8080", "listening on http://localhost:8080"},
	{"url host at the end of the stream", "redis://:hunter2@cache", "redis://:" + Marker + "@cache"},
	{"url host past holdLimit", "https://u:pw@" + strings.Repeat("h", holdLimit) + "@x", "https://u:" + Marker + "@" + strings.Repeat("h", holdLimit) + "@x"},
	{"url percent-encoded password with an @", "u=https%3A%2F%2Fbob%3Ap%40ss%40h%2Fx&y", "u=https%3A%2F%2Fbob%3A" + Marker + "%40h%2Fx&y"},
	{"token inside url password", "https://u:ghp_" + ghTok + "@h/", "https://u:" + Marker + "@h/"},
	{"jwt in bearer", "Authorization: Bearer eyJhbGciOi.eyJzdWIi.abcdEFGH\n", "Authorization: Bearer " + Marker + "\n"},
	// Escaped forms: tokens are made of characters no family escapes, so
	// they are found as they are; the header and the URL need their
	// separators read escaped.
	{"github token in escaped json", `"{\"token\":\"ghp_` + ghTok + `\"}"`, `"{\"token\":\"` + Marker + `\"}"`},
	{"github token percent-encoded", "q=token%3Dghp_" + ghTok + "%26x", "q=token%3D" + Marker + "%26x"},
	{"bearer percent-encoded", "GET /cb?h=Authorization%3A%20Bearer%20abc.def.gh&x=1 ok", "GET /cb?h=Authorization%3A%20Bearer%20" + Marker + "&x=1 ok"},
	{"bearer query form", "h=authorization%3a+Bearer+tok12345 next", "h=authorization%3a+Bearer+" + Marker + " next"},
	{"bearer credential escaped", "Authorization%3A%20Basic%20%2Babc12345 rest", "Authorization%3A%20Basic%20" + Marker + " rest"},
	{"bearer in a json value of a url", `"Authorization%3A%20Bearer%20tok12345" next`, `"Authorization%3A%20Bearer%20` + Marker + `" next`},
	{"header broken escape", "Authorization%3G Bearer abc", "Authorization%3G Bearer abc"},
	{"header in escaped json", `"{\"Authorization\":\"Bearer tok12345\"}" next`, `"{\"Authorization\":\"Bearer ` + Marker + `"}" next`},
	{"header in json with escaped slashes", `{"Authorization":"Basic dXNlcjpw\/YXNz","x":1}`, `{"Authorization":"Basic ` + Marker + `","x":1}`},
	{"go http.Header", "map[Authorization:[Bearer tok12345] Accept:[*/*]]", "map[Authorization:[Bearer " + Marker + " Accept:[*/*]]"},
	{"go http.Header with %#v", `http.Header{"Accept":[]string{"*/*"}, "Authorization":[]string{"Bearer tok12345"}}`,
		`http.Header{"Accept":[]string{"*/*"}, "Authorization":[]string{"Bearer ` + Marker + `"}}`},
	{"go %#v of another type is no scheme", `"Authorization":[]strings{"Bearer tok12345"}`, `"Authorization":[]strings{"Bearer tok12345"}`},
	{"header list in json", `{"Authorization":["Bearer tok12345"]} next`, `{"Authorization":["Bearer ` + Marker + `"]} next`},
	{"compact json keeps the next field", `{"h":{"Authorization":["Bearer x1234567"],"Content-Type":["a/b"]},"msg":"done"}`,
		`{"h":{"Authorization":["Bearer ` + Marker + `"],"Content-Type":["a/b"]},"msg":"done"}`},
	{"header quoted on a shell line", `curl -H "Authorization: Bearer tok12345"; echo done`, `curl -H "Authorization: Bearer ` + Marker + `"; echo done`},
	{"header single-quoted on a shell line", `curl -H 'Authorization: Basic dXNlcjpwYXNz' https://x`, `curl -H 'Authorization: Basic ` + Marker + `' https://x`},
	{"the other quote inside a quoted header", `"Authorization: Token abc'defghijk" x`, `"Authorization: Token ` + Marker + `" x`},
	{"the value's quote before the name's", `"Authorization": 'Bearer tok12345"x' y`, `"Authorization": 'Bearer ` + Marker + `' y`},
	{"python dict", `{'Authorization': 'Bearer tok12345', 'Accept': '*/*'}`, `{'Authorization': 'Bearer ` + Marker + `', 'Accept': '*/*'}`},
	{"logfmt field is no header", `msg="request authorized" authorization=bearer user=alice status=200`,
		`msg="request authorized" authorization=bearer user=alice status=200`},
	{"field inside a word", "reauthorization=bearer flow started", "reauthorization=bearer flow started"},
	{"logfmt quoted field", `level=INFO msg=req authorization="Bearer Zk4mQp9TxW2vLr8N" status=200`,
		`level=INFO msg=req authorization="Bearer ` + Marker + `" status=200`},
	{"toml key", "Authorization = 'Basic dXNlcjpodW50ZXIy'\nnext = 1", "Authorization = 'Basic " + Marker + "'\nnext = 1"},
	{"query field ends at a raw space", "GET /search?q=authorization=bearer HTTP/1.1", "GET /search?q=authorization=bearer HTTP/1.1"},
	{"header as a form field", "authorization=Bearer+tok12345&x=1 next", "authorization=Bearer+" + Marker + "&x=1 next"},
	{"header as a query field", "GET /x?Authorization=Basic%20dXNlcg%3D%3D&y=2 ok", "GET /x?Authorization=Basic%20" + Marker + "&y=2 ok"},
	{"header name then other text", "Authorization=none of it", "Authorization=none of it"},
	{"url in json with escaped slashes", `{"u":"https:\/\/bob:s3cret@example.com\/x"}`, `{"u":"https:\/\/bob:` + Marker + `@example.com\/x"}`},
	{"url escaped slashes no password", `"http:\/\/localhost:8080\/x"`, `"http:\/\/localhost:8080\/x"`},
	{"url percent-encoded", "GET /login?next=postgres%3A%2F%2Fapp%3Ahunter2pass%40db%3A5432%2Fapp&x=1 ok",
		"GET /login?next=postgres%3A%2F%2Fapp%3A" + Marker + "%40db%3A5432%2Fapp&x=1 ok"},
	{"url percent-encoded lower case", "u=https%3a%2f%2fbob%3as3cr%2Bt%3Ax%40h", "u=https%3a%2f%2fbob%3a" + Marker + "%40h"},
	{"url percent-encoded twice", "u=https%3A%2F%2Fbob%3Ap%2540ss%40h", "u=https%3A%2F%2Fbob%3A" + Marker + "%40h"},
	{"url percent-encoded no password", "u=https%3A%2F%2Fbob%40example.com%2Fx%3Fa%3Db&y=1", "u=https%3A%2F%2Fbob%40example.com%2Fx%3Fa%3Db&y=1"},
	{"url percent-encoded port only", "u=http%3A%2F%2Flocalhost%3A8080%2Fx&z", "u=http%3A%2F%2Flocalhost%3A8080%2Fx&z"},
	{"url percent-encoded value ends", "u=https%3A%2F%2Fbob%3Apass&next=%40", "u=https%3A%2F%2Fbob%3Apass&next=%40"},
	{"url percent-encoded long password", "u=https%3A%2F%2Fb%3A" + strings.Repeat("p%41", 1500) + "%40h&x",
		"u=https%3A%2F%2Fb%3A" + Marker + "%40h&x"}, // past holdLimit, then each escape as it comes
	{"url encodeURIComponent", "GET /login?next=https%3A%2F%2Fbob%3AS3cret!pa*ss(1)%40db.example.com%2F HTTP/1.1",
		"GET /login?next=https%3A%2F%2Fbob%3A" + Marker + "%40db.example.com%2F HTTP/1.1"},
	{"url python quote keeps slashes", "GET /login?next=https%3A//bob%3As3cretpass%40db.example.com/ HTTP/1.1",
		"GET /login?next=https%3A//bob%3A" + Marker + "%40db.example.com/ HTTP/1.1"},
	{"url go path escape", "redirect=https:%2F%2Fbob:s3cretpass@db&x", "redirect=https:%2F%2Fbob:" + Marker + "@db&x"},
	{"url percent-encoded broken escape", "u=https%3A%2F%2Fbob%3Apa%4Gss%40h", "u=https%3A%2F%2Fbob%3Apa%4Gss%40h"},
}

func TestFormatRules(t *testing.T) {
	r := mustNew(t)
	for _, c := range ruleCases {
		in := []byte(c.in)
		got := r.String(c.in)
		if got != c.want {
			t.Errorf("%s: got %q want %q", c.name, got, c.want)
			continue
		}
		step := 1
		if len(in) > 256 {
			step = len(in) / 40 // keep the long inputs cheap
		}
		for cut := 0; cut <= len(in); cut += step {
			if out := string(feedCuts(r, in, cut)); out != c.want {
				t.Fatalf("%s: split at %d: got %q", c.name, cut, out)
			}
		}
		if out := string(oneByte(r, in)); out != c.want {
			t.Fatalf("%s: one-byte writes: got %q", c.name, out)
		}
	}
}

func TestFormatRulesWithSecrets(t *testing.T) {
	// Registered secrets must not change what the rules find.
	r := mustNew(t, "unrelated-secret-1", "ghp_notreallyatoken")
	for _, c := range ruleCases {
		if got := r.String(c.in); got != c.want {
			t.Errorf("%s: got %q want %q", c.name, got, c.want)
		}
	}
}

// TestTokenSplitAfterPrefix writes each token's prefix on its own, and
// cuts each token off at the end of the stream.
func TestTokenSplitAfterPrefix(t *testing.T) {
	r := mustNew(t)
	tokens := []struct{ prefix, rest string }{
		{"ghp_", ghTok},
		{"github_pat_", "11ABCDEFG0123456789_abcdefghijkl"},
		{"AKIA", "IOSFODNN7EXAMPLE"},
		{"xoxp-", "1234567890-abc"},
		{"sk_test_", "4eC39HqLyjWDarjt"},
		{"sk-proj-", "abcdefghij_KLMNOPQRST"},
		{"sk-ant-", "api03-abcdefghijklmnop"},
		{"eyJ", "hbGciOi.eyJzdWIi.abcdEFGH"},
		{"-----BEGIN ", "RSA PRIVATE KEY-----\nabc\n-----END RSA PRIVATE KEY-----"},
	}
	for _, tok := range tokens {
		s := r.NewStream()
		out := s.Redact(nil, []byte("x "+tok.prefix))
		if string(out) != "x " {
			t.Fatalf("%s: released %q before the token was decided", tok.prefix, out)
		}
		out = s.Redact(out, []byte(tok.rest+" y"))
		if got := string(s.Flush(out)); got != "x "+Marker+" y" {
			t.Fatalf("%s: split after prefix: got %q", tok.prefix, got)
		}
		// Cut off at the end of the stream, complete or not.
		if got := r.String("x " + tok.prefix + tok.rest); got != "x "+Marker {
			t.Fatalf("%s: complete at EOF: got %q", tok.prefix, got)
		}
		if got := r.String("x " + tok.prefix + tok.rest[:len(tok.rest)/2]); got != "x "+Marker {
			t.Fatalf("%s: partial at EOF: got %q", tok.prefix, got)
		}
	}
}

func TestPEMWithoutEndIsNotBuffered(t *testing.T) {
	r := mustNew(t)
	s := r.NewStream()
	out := s.Redact(nil, []byte("start\n-----BEGIN PRIVATE KEY-----\n"))
	line := []byte(strings.Repeat("MIIEvQIBADANBgkqhkiG9w0BAQEFAASC", 2) + "\n")
	for i := 0; i < 10000; i++ {
		out = s.Redact(out, line)
		if s.Held() > 16 {
			t.Fatalf("%d bytes held inside a PEM body", s.Held())
		}
	}
	if got := string(s.Flush(out)); got != "start\n"+Marker {
		t.Fatalf("got %q", got)
	}
}

func TestCharacterClasses(t *testing.T) {
	in := func(c *[256]bool, s string) bool {
		for i := 0; i < len(s); i++ {
			if !c[s[i]] {
				return false
			}
		}
		return true
	}
	out := func(c *[256]bool, s string) bool {
		for i := 0; i < len(s); i++ {
			if c[s[i]] {
				return false
			}
		}
		return true
	}
	checks := []struct {
		name string
		ok   bool
	}{
		{"alnum", in(classAlnum, "azAZ09") && out(classAlnum, "_-. @")},
		{"b64url", in(classB64URL, "azAZ09_-") && out(classB64URL, ".+/= ")},
		{"jwt", in(classJWT, "aZ9_-.") && out(classJWT, "+/= ")},
		{"aws", in(classUpperNum, "AZ09") && out(classUpperNum, "az_")},
		{"slack", in(classAlnumDash, "aZ9-") && out(classAlnumDash, "_. ")},
		{"url user", in(classURLUser, "aZ9-._~%!$&'()*+,;=") && out(classURLUser, ":@/?# \n")},
		{"url password", in(classURLPass, "aZ9-._~%!$&'()*+,;=:#^|{}[]\\") && out(classURLPass, "@/?\"<>` \n")},
		{"space", in(classSpace, " \t\n\r\v\f") && out(classSpace, "a-")},
	}
	for _, c := range checks {
		if !c.ok {
			t.Errorf("class %s is wrong", c.name)
		}
	}
}

// TestRuleWindows checks that every stride window lies inside its pattern,
// at offsets that automaton.ruleGrams can record: a window past the end
// would let the skip miss the pattern.
func TestRuleWindows(t *testing.T) {
	for _, p := range rulePatterns() {
		if p.window < 0 || p.window+ruleStride+1 > len(p.text) || p.window+ruleStride-1 > maxRuleOffset {
			t.Errorf("pattern %q: window %d", p.text, p.window)
		}
	}
	if authWindow+ruleStride+1 > len(authWord) || authWindow+ruleStride-1 > maxRuleOffset {
		t.Errorf("authorization window %d", authWindow)
	}
}

// TestLookBehindCoversTriggers: glued reads glueBehind bytes before a trigger's
// first byte, which may lie a trigger's length before the bytes held.
func TestLookBehindCoversTriggers(t *testing.T) {
	for _, p := range rulePatterns() {
		if need := len(p.text) - 1 + glueBehind; need > maxLookBehind {
			t.Errorf("trigger %q needs %d bytes of look-behind, maxLookBehind is %d", p.text, need, maxLookBehind)
		}
	}
}

// TestExactRulesShareAPrefixLength: nextInner measures every inner
// candidate of an exact rule by its first prefix.
func TestExactRulesShareAPrefixLength(t *testing.T) {
	for i, tr := range tokenRules {
		for _, p := range tr.prefixes {
			if tr.exact && len(p) != len(tr.prefixes[0]) {
				t.Errorf("rule %d: prefix %q is not %d bytes", i, p, len(tr.prefixes[0]))
			}
		}
	}
}

// TestPEMKeysAsLogsPrintThem: the ways the reviews printed real keys, each
// redacted through its END line. (Telling a BEGIN line quoted in a message
// from a key, by what follows it, leaked some of these each time it was
// tried: a block is redacted to its END line or the end of the stream.)
func TestPEMKeysAsLogsPrintThem(t *testing.T) {
	const line = "MC4CAQAwBQYDK2VwBCIEIFljACuQV/q4wQpAMv+yDXYTXuGUFUJSUv+9I0vJ6YRt" // an Ed25519 key
	r := mustNew(t)
	for _, c := range []struct{ name, in string }{
		{"docker compose prefixes", "web-1  | -----BEGIN PRIVATE KEY-----\nweb-1  | " + line + "\nweb-1  | -----END PRIVATE KEY-----\n"},
		{"armor headers", "-----BEGIN PGP PRIVATE KEY BLOCK-----\nVersion: BCPG v1.58\n\n" + line + "\n-----END PGP PRIVATE KEY BLOCK-----\n"},
		{"one json record a line", `{"MESSAGE":"-----BEGIN PRIVATE KEY-----"}` + "\n" + `{"MESSAGE":"` + line + `"}` + "\n" + `{"MESSAGE":"-----END PRIVATE KEY-----"}` + "\n"},
		{"xml with headers", "<k>-----BEGIN RSA PRIVATE KEY-----&#xA;Proc-Type: 4,ENCRYPTED&#xA;" + line + "&#xA;-----END RSA PRIVATE KEY-----</k>\n"},
		{"json escaped twice", `"-----BEGIN RSA PRIVATE KEY-----\\nProc-Type: 4,ENCRYPTED\\n` + line + `\\n-----END RSA PRIVATE KEY-----\\n"` + "\n"},
		{"php json", `{"key":"-----BEGIN PRIVATE KEY-----\n` + strings.ReplaceAll(line, "/", `\/`) + `\n-----END PRIVATE KEY-----\n"}` + "\n"},
		{".net json", `{"key":"-----BEGIN PRIVATE KEY-----\n` + strings.ReplaceAll(line, "+", `\u002B`) + `\n-----END PRIVATE KEY-----\n"}` + "\n"},
		{"after a quoted begin line", "err: want -----BEGIN RSA PRIVATE KEY----- here\n" + strings.Repeat("x\n", 2030) + "-----BEGIN PRIVATE KEY-----\n" + line + "\n-----END PRIVATE KEY-----\n"},
	} {
		for _, out := range []string{r.String(c.in), string(oneByte(r, []byte(c.in)))} {
			if strings.Contains(out, line[:20]) || !strings.Contains(out, Marker) {
				t.Errorf("%s: got %q", c.name, out)
			}
		}
	}
}
