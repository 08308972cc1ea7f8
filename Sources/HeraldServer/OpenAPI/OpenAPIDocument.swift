/// docs/openapi.yaml, served at `/openapi.yaml`: SwiftPM embeds it in the binary through the link
/// Sources/HeraldServer/OpenAPI/openapi.yaml (`resources: [.embedInCode(…)]` in Package.swift), so there is no copy
/// to keep in step.
enum OpenAPIDocument {
    static let yaml = String(decoding: PackageResources.openapi_yaml, as: UTF8.self)
}
