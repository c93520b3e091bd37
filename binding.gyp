{
  "targets": [
    {
      "target_name": "fsat",
      "sources": ["native/fsat.c"],
      "cflags": ["-O2", "-Wall", "-Wextra", "-Wno-unused-parameter"],
      "xcode_settings": { "OTHER_CFLAGS": ["-O2"] }
    }
  ]
}
