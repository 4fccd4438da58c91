package tlsconfig

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/des"
	"crypto/pbkdf2"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/subtle"
	"encoding/asn1"
	"errors"
	"fmt"
	"hash"

	"golang.org/x/crypto/scrypt"
)

// pkcs8Limits bound the work a key derivation may ask for, so that a key
// file cannot make loading take minutes or gigabytes.
type pkcs8Limits struct {
	// maxIterations bounds PBKDF2's iteration count.
	maxIterations int
	// maxScryptMemory bounds scrypt's memory (128·N·r·p bytes).
	maxScryptMemory int
}

// defaultPKCS8Limits are far above what openssl writes (PBKDF2: 2048
// iterations; scrypt: N=16384, r=8, p=1, 16 MiB). The scrypt bound is
// OpenSSL's own default memory limit for scrypt (32 MiB).
func defaultPKCS8Limits() pkcs8Limits {
	return pkcs8Limits{maxIterations: 10_000_000, maxScryptMemory: 32 << 20}
}

// Object identifiers of PKCS#5 v2.1 (RFC 8018), RFC 7914 (scrypt) and the
// ciphers OpenSSL writes into PBES2.
var (
	oidPBES2      = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 5, 13}
	oidPBKDF2     = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 5, 12}
	oidScrypt     = asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 11591, 4, 11}
	oidHMACSHA1   = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 7}
	oidHMACSHA224 = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 8}
	oidHMACSHA256 = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 9}
	oidHMACSHA384 = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 10}
	oidHMACSHA512 = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 11}
	oidAES128CBC  = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 1, 2}
	oidAES192CBC  = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 1, 22}
	oidAES256CBC  = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 1, 42}
	oidDESEDE3CBC = asn1.ObjectIdentifier{1, 2, 840, 113549, 3, 7}
)

// pkcs8RefusedScheme names the password-based schemes of PKCS#5 v1.5 and
// PKCS#12 that are refused by name: they are weak, and openssl writes
// them only when asked with -v1.
func pkcs8RefusedScheme(oid asn1.ObjectIdentifier) (string, bool) {
	switch oid.String() {
	case "1.2.840.113549.1.5.3":
		return "pbeWithMD5AndDES-CBC", true
	case "1.2.840.113549.1.5.10":
		return "pbeWithSHA1AndDES-CBC", true
	case "1.2.840.113549.1.12.1.1":
		return "pbeWithSHAAnd128BitRC4", true
	case "1.2.840.113549.1.12.1.3":
		return "pbeWithSHAAnd3-KeyTripleDES-CBC", true
	case "1.2.840.113549.1.12.1.6":
		return "pbeWithSHAAnd40BitRC2-CBC", true
	}
	return "", false
}

type algorithmIdentifier struct {
	Algorithm  asn1.ObjectIdentifier
	Parameters asn1.RawValue `asn1:"optional"`
}

type encryptedPrivateKeyInfo struct {
	Algorithm     algorithmIdentifier
	EncryptedData []byte
}

type pbes2Params struct {
	KeyDerivationFunc algorithmIdentifier
	EncryptionScheme  algorithmIdentifier
}

type pbkdf2Params struct {
	Salt           []byte
	IterationCount int
	KeyLength      int                 `asn1:"optional"`
	PRF            algorithmIdentifier `asn1:"optional"`
}

type scryptParams struct {
	Salt                     []byte
	CostParameter            int
	BlockSize                int
	ParallelizationParameter int
	KeyLength                int `asn1:"optional"`
}

// decryptPKCS8 decrypts the DER of an ENCRYPTED PRIVATE KEY block
// (EncryptedPrivateKeyInfo, RFC 5958) with password and returns the
// PKCS#8 PrivateKeyInfo inside. It reads what OpenSSL and BoringSSL
// write: PBES2 with PBKDF2 (HMAC-SHA1, -SHA224, -SHA256, -SHA384,
// -SHA512) or scrypt, and AES-128/192/256-CBC or DES-EDE3-CBC.
func decryptPKCS8(der, password []byte, limits pkcs8Limits) ([]byte, error) {
	var info encryptedPrivateKeyInfo
	if err := unmarshalDER(der, &info); err != nil {
		return nil, fmt.Errorf("EncryptedPrivateKeyInfo: %w", err)
	}
	if !info.Algorithm.Algorithm.Equal(oidPBES2) {
		if name, ok := pkcs8RefusedScheme(info.Algorithm.Algorithm); ok {
			return nil, fmt.Errorf("the key is encrypted with %s, which is not supported: re-encrypt it with PBES2 (openssl pkcs8 -topk8 -v2 aes-256-cbc)", name)
		}
		return nil, fmt.Errorf("unsupported key encryption algorithm %s", info.Algorithm.Algorithm)
	}
	var params pbes2Params
	if err := unmarshalDER(info.Algorithm.Parameters.FullBytes, &params); err != nil {
		return nil, fmt.Errorf("PBES2 parameters: %w", err)
	}
	newBlock, keyLen, iv, err := pbes2Cipher(params.EncryptionScheme)
	if err != nil {
		return nil, err
	}
	key, err := pbes2Key(params.KeyDerivationFunc, password, keyLen, limits)
	if err != nil {
		return nil, err
	}
	block, err := newBlock(key)
	if err != nil {
		return nil, err
	}
	data := info.EncryptedData
	if len(data) == 0 || len(data)%block.BlockSize() != 0 {
		return nil, errors.New("the encrypted key's length is not a multiple of the cipher's block size")
	}
	plain := make([]byte, len(data))
	cipher.NewCBCDecrypter(block, iv).CryptBlocks(plain, data)
	plain, ok := unpad(plain, block.BlockSize())
	if !ok {
		// A wrong password almost always shows as bad padding.
		return nil, errors.New(errWrongPassword)
	}
	return plain, nil
}

// errWrongPassword is what a key that does not decrypt says: with CBC, a
// wrong password and a damaged file look alike.
const errWrongPassword = "cannot decrypt the private key with the password (wrong password?)"

// pbes2Cipher reads PBES2's encryptionScheme: the block cipher, its key
// length and the CBC initialisation vector.
func pbes2Cipher(alg algorithmIdentifier) (func([]byte) (cipher.Block, error), int, []byte, error) {
	var (
		newBlock = aes.NewCipher
		keyLen   int
	)
	switch {
	case alg.Algorithm.Equal(oidAES128CBC):
		keyLen = 16
	case alg.Algorithm.Equal(oidAES192CBC):
		keyLen = 24
	case alg.Algorithm.Equal(oidAES256CBC):
		keyLen = 32
	case alg.Algorithm.Equal(oidDESEDE3CBC):
		newBlock, keyLen = des.NewTripleDESCipher, 24
	default:
		return nil, 0, nil, fmt.Errorf("unsupported PBES2 cipher %s (want AES-128/192/256-CBC or DES-EDE3-CBC)", alg.Algorithm)
	}
	var iv []byte
	if err := unmarshalDER(alg.Parameters.FullBytes, &iv); err != nil {
		return nil, 0, nil, fmt.Errorf("PBES2 cipher parameters: %w", err)
	}
	blockSize := aes.BlockSize
	if alg.Algorithm.Equal(oidDESEDE3CBC) {
		blockSize = des.BlockSize
	}
	if len(iv) != blockSize {
		return nil, 0, nil, fmt.Errorf("PBES2 cipher parameters: the IV has %d bytes, want %d", len(iv), blockSize)
	}
	return newBlock, keyLen, iv, nil
}

// pbes2Key derives the cipher key from password with PBES2's
// keyDerivationFunc, within limits.
func pbes2Key(kdf algorithmIdentifier, password []byte, keyLen int, limits pkcs8Limits) ([]byte, error) {
	switch {
	case kdf.Algorithm.Equal(oidPBKDF2):
		var p pbkdf2Params
		if err := unmarshalDER(kdf.Parameters.FullBytes, &p); err != nil {
			return nil, fmt.Errorf("PBKDF2 parameters: %w", err)
		}
		if err := checkKeyLength(p.KeyLength, keyLen); err != nil {
			return nil, err
		}
		if p.IterationCount < 1 || p.IterationCount > limits.maxIterations {
			return nil, fmt.Errorf("PBKDF2 iteration count %d is out of range [1, %d]", p.IterationCount, limits.maxIterations)
		}
		h, err := pbkdf2Hash(p.PRF)
		if err != nil {
			return nil, err
		}
		return pbkdf2.Key(h, string(password), p.Salt, p.IterationCount, keyLen)
	case kdf.Algorithm.Equal(oidScrypt):
		var p scryptParams
		if err := unmarshalDER(kdf.Parameters.FullBytes, &p); err != nil {
			return nil, fmt.Errorf("scrypt parameters: %w", err)
		}
		if err := checkKeyLength(p.KeyLength, keyLen); err != nil {
			return nil, err
		}
		n, r, par := p.CostParameter, p.BlockSize, p.ParallelizationParameter
		if n < 2 || n&(n-1) != 0 || r < 1 || par < 1 || r > limits.maxScryptMemory/128 || par > limits.maxScryptMemory/128 ||
			n > limits.maxScryptMemory/128/r || r*par > limits.maxScryptMemory/128 || 128*n*r+128*r*par > limits.maxScryptMemory {
			return nil, fmt.Errorf("scrypt parameters N=%d r=%d p=%d are invalid or need more than %d bytes", n, r, par, limits.maxScryptMemory)
		}
		return scrypt.Key(password, p.Salt, n, r, par, keyLen)
	default:
		return nil, fmt.Errorf("unsupported PBES2 key derivation function %s (want PBKDF2 or scrypt)", kdf.Algorithm)
	}
}

// pbkdf2Hash maps PBKDF2's prf to its hash; an absent prf is
// HMAC-SHA1, the default of RFC 8018.
func pbkdf2Hash(prf algorithmIdentifier) (func() hash.Hash, error) {
	switch {
	case len(prf.Algorithm) == 0, prf.Algorithm.Equal(oidHMACSHA1):
		return sha1.New, nil
	case prf.Algorithm.Equal(oidHMACSHA224):
		return sha256.New224, nil
	case prf.Algorithm.Equal(oidHMACSHA256):
		return sha256.New, nil
	case prf.Algorithm.Equal(oidHMACSHA384):
		return sha512.New384, nil
	case prf.Algorithm.Equal(oidHMACSHA512):
		return sha512.New, nil
	}
	return nil, fmt.Errorf("unsupported PBKDF2 pseudo-random function %s", prf.Algorithm)
}

// checkKeyLength accepts an absent key length or the cipher's own.
func checkKeyLength(got, want int) error {
	if got != 0 && got != want {
		return fmt.Errorf("the key derivation's key length %d does not match the cipher's %d", got, want)
	}
	return nil
}

// unpad strips PKCS#7 padding in constant time over the last block.
func unpad(b []byte, blockSize int) ([]byte, bool) {
	n := int(b[len(b)-1])
	if n == 0 || n > blockSize {
		return nil, false
	}
	want := make([]byte, n)
	for i := range want {
		want[i] = byte(n)
	}
	if subtle.ConstantTimeCompare(b[len(b)-n:], want) != 1 {
		return nil, false
	}
	return b[:len(b)-n], true
}

// unmarshalDER decodes one DER value into v and refuses trailing bytes.
func unmarshalDER(der []byte, v any) error {
	rest, err := asn1.Unmarshal(der, v)
	if err != nil {
		return err
	}
	if len(rest) != 0 {
		return errors.New("trailing data")
	}
	return nil
}
