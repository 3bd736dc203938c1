package auth

import "github.com/agentmemory/agentmemory/models"

// FeedView is key r as a listing shows it (KeyInfo: never its secret or hash), for the export
// feed (issue 33).
func FeedView(r models.APIKey) KeyInfo { return keyInfos([]models.APIKey{r})[0] }
