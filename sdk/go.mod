module github.com/agentmemory/agentmemory/sdk

go 1.26.0
