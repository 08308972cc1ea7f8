#!/usr/bin/env python3
"""An ES256 JWT implementation outside Herald, built on `cryptography` only, to check interoperability.

    jwt_interop.py sign KEY.p8 KID ISS IAT [der]   prints a compact JWS (r||s signature, or DER if asked)
    jwt_interop.py verify PUBLIC.pem JWT            exits 0 and prints the claims when the signature verifies
"""
import base64, json, sys
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature, encode_dss_signature


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unb64url(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def sign(key_path, kid, iss, iat, der=False):
    with open(key_path, "rb") as handle:
        key = serialization.load_pem_private_key(handle.read(), password=None)
    header = b64url(json.dumps({"alg": "ES256", "kid": kid, "typ": "JWT"}, separators=(",", ":")).encode())
    claims = b64url(json.dumps({"iss": iss, "iat": int(iat)}, separators=(",", ":")).encode())
    signing_input = f"{header}.{claims}".encode()
    der_signature = key.sign(signing_input, ec.ECDSA(hashes.SHA256()))
    if der:
        signature = der_signature
    else:
        r, s = decode_dss_signature(der_signature)
        signature = r.to_bytes(32, "big") + s.to_bytes(32, "big")
    print(f"{header}.{claims}.{b64url(signature)}")


def verify(public_path, token):
    with open(public_path, "rb") as handle:
        public_key = serialization.load_pem_public_key(handle.read())
    header, claims, signature = token.split(".")
    raw = unb64url(signature)
    if len(raw) != 64:
        print("signature is not 64 bytes of r||s", file=sys.stderr)
        sys.exit(2)
    der = encode_dss_signature(int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big"))
    try:
        public_key.verify(der, f"{header}.{claims}".encode(), ec.ECDSA(hashes.SHA256()))
    except InvalidSignature:
        print("signature does not verify", file=sys.stderr)
        sys.exit(1)
    print(json.dumps({"header": json.loads(unb64url(header)), "claims": json.loads(unb64url(claims))}))


if __name__ == "__main__":
    if sys.argv[1] == "sign":
        sign(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5], der=len(sys.argv) > 6 and sys.argv[6] == "der")
    elif sys.argv[1] == "verify":
        verify(sys.argv[2], sys.argv[3])
    else:
        sys.exit(f"unknown command {sys.argv[1]}")
