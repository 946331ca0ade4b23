// Test-process environment. The AWS SDK warns once per process that releases after January 2027 need
// Node 22; we pin the SDK version in the lockfile, so the warning is noise in test output. Child
// processes spawned by tests inherit this too.
process.env['AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED'] = 'true';
