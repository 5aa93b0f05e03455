-- The tables xfertop reads, as Nsight Systems 2024 exports them: the columns, types and constraints of
-- NVIDIA's "SQLite Schema Reference" (Nsight Systems User Guide, July 2024), as published in
-- github.com/chenbobby/cuda_lab nsys_go/events/schema.sql (commit 63b63f8), comments left out.
CREATE TABLE StringIds (
  id INTEGER NOT NULL PRIMARY KEY,
  value TEXT NOT NULL
);
CREATE TABLE TARGET_INFO_SESSION_START_TIME (
  utcEpochNs INTEGER,
  utcTime TEXT,
  localTime TEXT
);
CREATE TABLE ANALYSIS_DETAILS (
  globalVid INTEGER NOT NULL,
  duration INTEGER NOT NULL,
  startTime INTEGER NOT NULL,
  stopTime INTEGER NOT NULL
);
CREATE TABLE TARGET_INFO_GPU (
  vmId INTEGER NOT NULL,
  id INTEGER NOT NULL,
  name TEXT,
  busLocation TEXT,
  isDiscrete INTEGER,
  l2CacheSize INTEGER,
  totalMemory INTEGER,
  memoryBandwidth INTEGER,
  clockRate INTEGER,
  smCount INTEGER,
  pwGpuId INTEGER,
  uuid TEXT,
  luid INTEGER,
  chipName TEXT,
  cuDevice INTEGER,
  ctxswDevPath TEXT,
  ctrlDevPath TEXT,
  revision INTEGER,
  nodeMask INTEGER,
  constantMemory INTEGER,
  maxIPC INTEGER,
  maxRegistersPerBlock INTEGER,
  maxShmemPerBlock INTEGER,
  maxShmemPerBlockOptin INTEGER,
  maxShmemPerSm INTEGER,
  maxRegistersPerSm INTEGER,
  threadsPerWarp INTEGER,
  asyncEngines INTEGER,
  maxWarpsPerSm INTEGER,
  maxBlocksPerSm INTEGER,
  maxThreadsPerBlock INTEGER,
  maxBlockDimX INTEGER,
  maxBlockDimY INTEGER,
  maxBlockDimZ INTEGER,
  maxGridDimX INTEGER,
  maxGridDimY INTEGER,
  maxGridDimZ INTEGER,
  computeMajor INTEGER,
  computeMinor INTEGER,
  smMajor INTEGER,
  smMinor INTEGER
);
CREATE TABLE META_DATA_EXPORT (
  name TEXT NOT NULL,
  value TEXT
);
CREATE TABLE ENUM_NSYS_EVENT_TYPE (
  id INTEGER NOT NULL PRIMARY KEY,
  name TEXT,
  label TEXT
);
CREATE TABLE ENUM_CUDA_MEMCPY_OPER (
  id INTEGER NOT NULL PRIMARY KEY,
  name TEXT,
  label TEXT
);
CREATE TABLE ENUM_CUPTI_SYNC_TYPE (
  id INTEGER NOT NULL PRIMARY KEY,
  name TEXT,
  label TEXT
);
CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (
  start INTEGER NOT NULL,
  end INTEGER NOT NULL,
  eventClass INTEGER NOT NULL,
  globalTid INTEGER,
  correlationId INTEGER,
  nameId INTEGER NOT NULL,
  returnValue INTEGER NOT NULL,
  callchainId INTEGER
);
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (
  start INTEGER NOT NULL,
  end INTEGER NOT NULL,
  deviceId INTEGER NOT NULL,
  contextId INTEGER NOT NULL,
  streamId INTEGER NOT NULL,
  correlationId INTEGER,
  globalPid INTEGER,
  demangledName INTEGER NOT NULL,
  shortName INTEGER NOT NULL,
  mangledName INTEGER,
  launchType INTEGER,
  cacheConfig INTEGER,
  registersPerThread INTEGER NOT NULL,
  gridX INTEGER NOT NULL,
  gridY INTEGER NOT NULL,
  gridZ INTEGER NOT NULL,
  blockX INTEGER NOT NULL,
  blockY INTEGER NOT NULL,
  blockZ INTEGER NOT NULL,
  staticSharedMemory INTEGER NOT NULL,
  dynamicSharedMemory INTEGER NOT NULL,
  localMemoryPerThread INTEGER NOT NULL,
  localMemoryTotal INTEGER NOT NULL,
  gridId INTEGER NOT NULL,
  sharedMemoryExecuted INTEGER,
  graphNodeId INTEGER,
  sharedMemoryLimitConfig INTEGER
);
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (
  start INTEGER NOT NULL,
  end INTEGER NOT NULL,
  deviceId INTEGER NOT NULL,
  contextId INTEGER NOT NULL,
  streamId INTEGER NOT NULL,
  correlationId INTEGER,
  globalPid INTEGER,
  bytes INTEGER NOT NULL,
  copyKind INTEGER NOT NULL,
  deprecatedSrcId INTEGER,
  srcKind INTEGER,
  dstKind INTEGER,
  srcDeviceId INTEGER,
  srcContextId INTEGER,
  dstDeviceId INTEGER,
  dstContextId INTEGER,
  migrationCause INTEGER,
  graphNodeId INTEGER,
  virtualAddress INTEGER
);
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET (
  start INTEGER NOT NULL,
  end INTEGER NOT NULL,
  deviceId INTEGER NOT NULL,
  contextId INTEGER NOT NULL,
  streamId INTEGER NOT NULL,
  correlationId INTEGER,
  globalPid INTEGER,
  value INTEGER NOT NULL,
  bytes INTEGER NOT NULL,
  graphNodeId INTEGER,
  memKind INTEGER
);
CREATE TABLE CUPTI_ACTIVITY_KIND_SYNCHRONIZATION (
  start INTEGER NOT NULL,
  end INTEGER NOT NULL,
  deviceId INTEGER NOT NULL,
  contextId INTEGER NOT NULL,
  streamId INTEGER NOT NULL,
  correlationId INTEGER,
  globalPid INTEGER,
  syncType INTEGER NOT NULL,
  eventId INTEGER NOT NULL
);
CREATE TABLE NVTX_EVENTS (
  start INTEGER NOT NULL,
  end INTEGER,
  eventType INTEGER NOT NULL,
  rangeId INTEGER,
  category INTEGER,
  color INTEGER,
  text TEXT,
  globalTid INTEGER,
  endGlobalTid INTEGER,
  textId INTEGER,
  domainId INTEGER,
  uint64Value INTEGER,
  int64Value INTEGER,
  doubleValue REAL,
  uint32Value INTEGER,
  int32Value INTEGER,
  floatValue REAL,
  jsonTextId INTEGER,
  jsonText TEXT
);
