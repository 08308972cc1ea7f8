#!/usr/bin/env bash
# Makes the provisioning-profile fixtures: CMS (PKCS#7) signed containers with an XML plist inside, the shape of
# Apple's embedded.mobileprovision / embedded.provisionprofile. The signing key and certificate are throwaway and
# deleted at the end; the SDK does not check the signature. Run from anywhere: ./make-profiles.sh
set -euo pipefail
cd "$(dirname "$0")"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=Herald Test Profile Signer" \
    -keyout "$work/key.pem" -out "$work/cert.pem" 2>/dev/null

# profile <file> <platform> <entitlement key> <environment> <name> <get-task-allow>
profile() {
    local file=$1 platform=$2 key=$3 environment=$4 name=$5 debuggable=$6
    cat > "$work/profile.plist" <<PLIST
<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<plist version="1.0">
<dict>
	<key>AppIDName</key>
	<string>Herald Demo</string>
	<key>ApplicationIdentifierPrefix</key>
	<array>
		<string>TESTTEAM01</string>
	</array>
	<key>CreationDate</key>
	<date>2026-01-01T00:00:00Z</date>
	<key>Platform</key>
	<array>
		<string>${platform}</string>
	</array>
	<key>Entitlements</key>
	<dict>
		<key>application-identifier</key>
		<string>TESTTEAM01.com.example.herald.demo</string>
		<key>${key}</key>
		<string>${environment}</string>
		<key>com.apple.developer.team-identifier</key>
		<string>TESTTEAM01</string>
		<key>get-task-allow</key>
		<${debuggable}/>
		<key>keychain-access-groups</key>
		<array>
			<string>TESTTEAM01.*</string>
		</array>
	</dict>
	<key>ExpirationDate</key>
	<date>2027-01-01T00:00:00Z</date>
	<key>Name</key>
	<string>${name}</string>
	<key>TeamIdentifier</key>
	<array>
		<string>TESTTEAM01</string>
	</array>
	<key>TeamName</key>
	<string>Herald Tests</string>
	<key>TimeToLive</key>
	<integer>365</integer>
	<key>UUID</key>
	<string>00000000-0000-4000-8000-000000000001</string>
	<key>Version</key>
	<integer>1</integer>
</dict>
</plist>
PLIST
    openssl cms -sign -nodetach -outform DER -binary -signer "$work/cert.pem" -inkey "$work/key.pem" \
        -in "$work/profile.plist" -out "$file"
}

profile development.mobileprovision iOS aps-environment development "Herald Demo Development" true
profile production.mobileprovision iOS aps-environment production "Herald Demo App Store" false
profile macos-production.provisionprofile OSX com.apple.developer.aps-environment production "Herald Demo Mac" false

# A development profile for an app without the Push Notifications capability: no aps-environment at all.
profile no-push.mobileprovision iOS com.example.unrelated-entitlement development "Herald Demo No Push" true

# A signed container whose content is not a property list.
printf 'This container holds no property list.\n' > "$work/text.txt"
openssl cms -sign -nodetach -outform DER -binary -signer "$work/cert.pem" -inkey "$work/key.pem" \
    -in "$work/text.txt" -out not-a-profile.mobileprovision

echo "Wrote: development.mobileprovision production.mobileprovision macos-production.provisionprofile no-push.mobileprovision not-a-profile.mobileprovision"
