package oauth2

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"strings"
)

// hmacPayloadSeparator joins the values the session HMAC covers.
const hmacPayloadSeparator = "\n"

// sessionHMAC is the value of the HMAC cookie, as Envoy computes it: the
// base64 of HMAC-SHA256(secret, domain\nexpires\naccess\nid\nrefresh),
// domain being cookie_domain or else the request's Host.
func sessionHMAC(secret []byte, domain, expires, access, id, refresh string) string {
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(strings.Join([]string{domain, expires, access, id, refresh}, hmacPayloadSeparator)))
	return base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// sessionHMACHex is the older form of the HMAC cookie, which Envoy still
// accepts: the base64 of the hexadecimal HMAC.
func sessionHMACHex(secret []byte, domain, expires, access, id, refresh string) string {
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(strings.Join([]string{domain, expires, access, id, refresh}, hmacPayloadSeparator)))
	return base64.StdEncoding.EncodeToString([]byte(hex.EncodeToString(mac.Sum(nil))))
}

// validHMAC reports whether got is the session HMAC of the values, in
// either form, compared in constant time.
func validHMAC(secret []byte, got, domain, expires, access, id, refresh string) bool {
	return constantEqual(sessionHMAC(secret, domain, expires, access, id, refresh), got) ||
		constantEqual(sessionHMACHex(secret, domain, expires, access, id, refresh), got)
}

// constantEqual compares two strings in constant time (for equal lengths).
func constantEqual(a, b string) bool {
	return len(a) == len(b) && subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

// hmacBase64 is the base64 of HMAC-SHA256(secret, message).
func hmacBase64(secret []byte, message string) string {
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(message))
	return base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// csrfToken is the nonce of one flow signed with the HMAC secret,
// "<nonce>.<hmac(nonce)>" (the signed double-submit cookie).
func csrfToken(secret []byte, nonce string) string {
	return nonce + "." + hmacBase64(secret, nonce)
}

// validCSRFToken reports whether token carries the HMAC of its nonce.
func validCSRFToken(secret []byte, token string) bool {
	nonce, mac, ok := strings.Cut(token, ".")
	return ok && constantEqual(hmacBase64(secret, nonce), mac)
}

// codeVerifier is a PKCE code verifier of 32 random octets (RFC 7636
// section 7.1), base64url without padding.
func codeVerifier() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// codeChallenge is the S256 challenge of a code verifier.
func codeChallenge(verifier string) string {
	sum := sha256.Sum256([]byte(verifier))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// flowID is a random 64-bit identifier of one authorization flow, in 16
// hexadecimal digits: the nonce of its CSRF token and the suffix of its
// cookies' names.
func flowID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// encrypt seals plaintext as Envoy does the tokens it keeps in cookies:
// AES-256-CBC with PKCS#7 padding, the key the SHA-256 of the secret, a
// random IV before the ciphertext, all base64url without padding.
func encrypt(plaintext string, secret []byte) string {
	key := sha256.Sum256(secret)
	block, _ := aes.NewCipher(key[:]) // a 32-byte key never fails
	pad := aes.BlockSize - len(plaintext)%aes.BlockSize
	buf := make([]byte, aes.BlockSize+len(plaintext)+pad)
	iv := buf[:aes.BlockSize]
	_, _ = rand.Read(iv)
	body := buf[aes.BlockSize:]
	copy(body, plaintext)
	for i := len(plaintext); i < len(body); i++ {
		body[i] = byte(pad)
	}
	cipher.NewCBCEncrypter(block, iv).CryptBlocks(body, body)
	return base64.RawURLEncoding.EncodeToString(buf)
}

// errDecrypt is any failure to open a sealed value.
var errDecrypt = errors.New("invalid encrypted data")

// decrypt opens what encrypt sealed.
func decrypt(sealed string, secret []byte) (string, error) {
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(sealed, "="))
	if err != nil || len(raw) <= aes.BlockSize || (len(raw)-aes.BlockSize)%aes.BlockSize != 0 {
		return "", errDecrypt
	}
	key := sha256.Sum256(secret)
	block, _ := aes.NewCipher(key[:])
	body := bytes.Clone(raw[aes.BlockSize:])
	cipher.NewCBCDecrypter(block, raw[:aes.BlockSize]).CryptBlocks(body, body)
	pad := int(body[len(body)-1])
	if pad == 0 || pad > aes.BlockSize || pad > len(body) {
		return "", errDecrypt
	}
	for _, b := range body[len(body)-pad:] {
		if int(b) != pad {
			return "", errDecrypt
		}
	}
	return string(body[:len(body)-pad]), nil
}
